"""Django settings of the sync service, made from the environment the service reads (pulp_sync/environment.py).

Loaded through `DJANGO_SETTINGS_MODULE=pulp_sync.settings` (set by `pulp_sync.setup()` and the CLI). The
environment is read once, when Django starts, through the one typed list in `environment.Environment`,
whose reference is docs/settings.md: a value the service cannot use is one ConfigurationError line, raised
before anything is made. The service's modules read what they need from here (`settings.PULP_SYNC_HOME`,
`settings.PULP_SYNC_WORKER_TTL`, ...); the names are those of the variables.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import dj_database_url
from django.utils.functional import SimpleLazyObject

from pulp_base import private
from pulp_sync import defaults, environment
from pulp_sync.errors import ConfigurationError

__all__ = [
    "ENVIRONMENT",
    "PULP_SYNC_HOME",
    "PULP_SYNC_ARTIFACTS",
    "PULP_SYNC_FSYNC",
    "PULP_SYNC_MAX_MANIFEST_BYTES",
    "PULP_SYNC_ADDRESS_POLICY",
    "PULP_SYNC_REPOSITORY_WAIT",
    "PULP_SYNC_WORKER_TTL",
    "PULP_SYNC_API_HEADER_TIMEOUT",
    "PULP_SYNC_API_BODY_TIMEOUT",
    "PULP_SYNC_API_SEND_TIMEOUT",
    "PULP_SYNC_API_CLIENT_REQUESTS",
    "PULP_SYNC_CONTENT_ACCEL_REDIRECT",
    "DATABASES",
    "INSTALLED_APPS",
    "SECRET_KEY",
    "USE_TZ",
    "TIME_ZONE",
    "DEFAULT_AUTO_FIELD",
    "REDIS_URL",
    "PULP_SYNC_QUEUE",
    "ALLOWED_HOSTS",
    "MIDDLEWARE",
    "ROOT_URLCONF",
    "REST_FRAMEWORK",
    "SPECTACULAR_SETTINGS",
]

ENVIRONMENT = environment.read()
"""The environment as read, typed; the settings below are made from it."""
PULP_SYNC_HOME = ENVIRONMENT.home
PULP_SYNC_ARTIFACTS = ENVIRONMENT.artifacts
PULP_SYNC_FSYNC = ENVIRONMENT.fsync
PULP_SYNC_MAX_MANIFEST_BYTES = ENVIRONMENT.max_manifest_bytes
PULP_SYNC_ADDRESS_POLICY = ENVIRONMENT.address_policy
"""Which hosts and addresses syncs may connect to; checked again at every redirect and resolved address."""
PULP_SYNC_REPOSITORY_WAIT = ENVIRONMENT.repository_wait
PULP_SYNC_WORKER_TTL = ENVIRONMENT.worker_ttl
PULP_SYNC_API_HEADER_TIMEOUT = ENVIRONMENT.api_header_timeout
PULP_SYNC_API_BODY_TIMEOUT = ENVIRONMENT.api_body_timeout
PULP_SYNC_API_SEND_TIMEOUT = ENVIRONMENT.api_send_timeout
PULP_SYNC_API_CLIENT_REQUESTS = ENVIRONMENT.api_client_requests
PULP_SYNC_CONTENT_ACCEL_REDIRECT = ENVIRONMENT.content_accel_redirect
REDIS_URL = ENVIRONMENT.redis_url
PULP_SYNC_QUEUE = ENVIRONMENT.queue


def _secret_key(home: Path) -> str:
    """PULP_SYNC_SECRET_KEY, else the key kept in `home`, made there on its first use. Django checks
    sessions with it, so it must be secret, and the same from one start to the next (a new key logs
    every session out)."""
    if ENVIRONMENT.secret_key is not None:
        return ENVIRONMENT.secret_key.get_secret_value()
    path = home / defaults.SECRET_KEY_FILE
    try:
        if not path.exists():
            _make_secret_key(path)
        key = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ConfigurationError(
            f"PULP_SYNC_HOME={home}: cannot keep the secret key in {path.name} ({error.strerror or error}): "
            "give a directory pulp-sync may write, or set PULP_SYNC_SECRET_KEY"
        ) from error
    if not key:
        raise ConfigurationError(f"{path} is empty: delete it (a new key is made), or set PULP_SYNC_SECRET_KEY")
    return key


def _make_secret_key(path: Path) -> None:
    """Write a random key to `path`, readable by its owner alone. It is written to a file of its own and
    hard-linked into place, so `path` appears whole or not at all: processes starting together (the API's
    workers, a worker, the CLI) never read half a key, and all keep the first one linked."""
    private.make_directory(path.parent)
    partial = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, private.FILE_MODE)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(secrets.token_urlsafe(50) + "\n")
            file.flush()
            os.fsync(file.fileno())  # never an empty key file after a power cut
        try:
            os.link(partial, path)
        except FileExistsError:
            pass  # another process linked its key first: that one is everybody's
    finally:
        partial.unlink()


_SQLITE_OPTIONS: dict[str, Any] = {
    # WAL lets readers run beside the one writer; synchronous=NORMAL is WAL's documented safe pairing
    # (a power cut may lose the last commits, never corrupt the file).
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
    # Writers take the lock when their transaction begins, so a busy database waits (up to
    # `timeout` seconds) instead of failing half-way through a transaction.
    "transaction_mode": "IMMEDIATE",
    "timeout": 30,
}


def _database() -> dj_database_url.DBConfig:
    """DATABASE_URL if given, else sqlite under PULP_SYNC_HOME; sqlite gets WAL and a busy timeout."""
    url = ENVIRONMENT.database_url or f"sqlite:///{PULP_SYNC_HOME / 'db.sqlite3'}"
    database = dj_database_url.parse(url)
    if database["ENGINE"] == "django.db.backends.sqlite3":
        database["OPTIONS"] = {**_SQLITE_OPTIONS, **database.get("OPTIONS", {})}
    return database


DATABASES = {"default": _database()}
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "pulp_sync.apps.PulpSyncConfig",
]
# Read, or made under PULP_SYNC_HOME, on its first use: by pulp_sync.database.configure, which every process
# of the service comes through, after every check above (a setting refused makes no file). Importing the
# settings alone writes nothing (mypy's django-stubs plugin does, to type them).
SECRET_KEY = SimpleLazyObject(lambda: _secret_key(PULP_SYNC_HOME))
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

ALLOWED_HOSTS = list(ENVIRONMENT.allowed_hosts)
# Sessions for Pulp's `login/` (pulp_sync/api/pulp/login.py), in Django's order. DRF's views are exempt
# from CsrfViewMiddleware's check (DRF's SessionAuthentication makes it, on session-authenticated unsafe
# requests only); the middleware is what sets the `csrftoken` cookie a login rotates.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "pulp_sync.api.urls"

# The REST API (pulp_sync/api/): JSON only, every endpoint but the schema needs a user (basic or
# token auth, or the session of a `login/`), Pulp's limit/offset pagination.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.BasicAuthentication",
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["pulp_sync.api.limits.JsonParser"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "pulp-sync API",
    "DESCRIPTION": "Remotes, repositories and their versions, syncs as tasks on RQ workers, artifacts.",
    "VERSION": "v3",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
}
