"""Django settings of the sync service: state under PULP_SYNC_HOME, the database from DATABASE_URL.

Loaded through `DJANGO_SETTINGS_MODULE=pulp_sync.settings` (set by `pulp_sync.setup()` and the
CLI). Everything is read from the environment once, when Django starts:

- `PULP_SYNC_HOME` (default `./.pulp-sync`): the sqlite database `db.sqlite3` and the artifact
  store `artifacts/`, whose temp dir `artifacts/tmp/` is on the same filesystem so that adopting a
  download is one atomic rename. Made readable by its owner only, as are the database and the secret key
  (pulp_base.private).
- `DATABASE_URL`: another database (`postgres://...`, `mysql://...`), parsed by dj-database-url.
- `PULP_SYNC_FSYNC=1`: flush each artifact and its directory to disk when it is adopted.
- `PULP_SYNC_MAX_MANIFEST_BYTES` (default 64 MiB, about 600,000 lines): the largest PULP_MANIFEST
  a sync downloads; a remote sending more fails the sync before it fills the disk or the memory.
- `PULP_SYNC_REPOSITORY_WAIT` (default 21600, six hours): seconds a sync waits for another sync of the
  same repository to finish; one repository builds one version at a time (pulp_sync/locks.py).
- `PULP_SYNC_WORKER_TTL` (default 30): seconds a worker's heartbeat in Redis lasts; renewed every third
  of that, and the other workers fail the tasks of a worker, on any host, whose heartbeat lapsed.
- `PULP_SYNC_API_HEADER_TIMEOUT` (default 10), `PULP_SYNC_API_BODY_TIMEOUT` (default 30) and
  `PULP_SYNC_API_SEND_TIMEOUT` (default 30): seconds a client of `pulp-sync api` has to send a request's
  head, to pause between two parts of its body, and to take the next part of an answer;
  `PULP_SYNC_API_CLIENT_REQUESTS` (default 32): the requests one client address may have in progress. nginx,
  before the API's gunicorn, applies them (pulp_sync/api/proxy.py, docs/api.md).
- `PULP_SYNC_CONTENT_ACCEL_REDIRECT` (default empty: gunicorn sends the files itself): the internal location
  of a proxy before the API (`/prefix/`, e.g. nginx's `internal` one) that sends the content app's files
  from the artifact store; the content app then answers with `X-Accel-Redirect` to it once it has decided
  the request may have the file. `pulp-sync api` sets it for its own nginx, `--accel-redirect` for yours.
- `REDIS_URL` (default `redis://127.0.0.1:6379/0`): the Redis of the RQ task queue.
- `PULP_SYNC_QUEUE` (default `pulp-sync-` and a digest of the database's identity, queues.queue_name): the
  RQ queue that syncs are queued on and workers take from; two installations on one Redis get two.
- `PULP_SYNC_REMOTE_ALLOW` (default empty: any) and `PULP_SYNC_REMOTE_DENY` (default link-local,
  `169.254.0.0/16,fe80::/10`): the remote-address policy every sync's downloads obey, as
  comma-separated networks and host names (downloaders/addresses.py); an empty DENY denies nothing.
- `PULP_SYNC_ALLOWED_HOSTS` (default `localhost,127.0.0.1,[::1]`): the host names the REST API
  answers to, comma-separated (Django's ALLOWED_HOSTS; `*` for any).
- `PULP_SYNC_SECRET_KEY` (default: a random key made on the first use into `secret_key` under
  PULP_SYNC_HOME, readable by its owner only): Django's SECRET_KEY, which API sessions (`login/`) are
  checked with. API hosts behind one address must share it (each host's PULP_SYNC_HOME makes its own), or
  a session from one host's `login/` is refused by the others; basic and token auth work regardless.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dj_database_url
from django.utils.functional import SimpleLazyObject

from downloaders import AddressPolicy
from pulp_base import private
from pulp_sync import defaults
from pulp_sync.errors import ConfigurationError
from pulp_sync.messages import redact

__all__ = [
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

_DATABASE_SCHEMES = ("sqlite", "postgres", "postgresql", "pgsql", "mysql")
_REDIS_SCHEMES = ("redis", "rediss", "unix")


def _home() -> Path:
    """PULP_SYNC_HOME (default ./.pulp-sync): a directory, or a path where one can be made."""
    home = Path(os.environ.get("PULP_SYNC_HOME") or ".pulp-sync").resolve()
    if home.exists() and not home.is_dir():
        raise ConfigurationError(f"PULP_SYNC_HOME={home} is a file: give a directory (made if missing)")
    return home


def _positive_whole(name: str, default: int, unit: str = "bytes") -> int:
    """A whole, positive number (of `unit`) from the environment variable `name`."""
    text = os.environ.get(name) or str(default)
    if not text.isdigit() or int(text) < 1:
        raise ConfigurationError(f"{name}={text!r}: give a whole, positive number of {unit}, e.g. {default}")
    return int(text)


def _seconds(name: str, default: float, positive: bool = False) -> float:
    """A finite number of seconds from the environment variable `name`: 0 or more, or with `positive`
    more than 0."""
    text = os.environ.get(name) or f"{default:g}"
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf") or (positive and seconds == 0):  # also refuses nan
        least = "above 0" if positive else "0 or more"
        raise ConfigurationError(f"{name}={text!r}: give a number of seconds, {least}, e.g. {default:g}")
    return seconds


def _address_policy() -> AddressPolicy:
    try:
        return AddressPolicy.parse(os.environ.get("PULP_SYNC_REMOTE_ALLOW"), os.environ.get("PULP_SYNC_REMOTE_DENY"))
    except ValueError as error:  # "allow: 'x' is neither a network ... nor a host name"
        which, _, why = str(error).partition(": ")
        raise ConfigurationError(f"PULP_SYNC_REMOTE_{which.upper()}: {why}") from error


def _secret_key(home: Path) -> str:
    """PULP_SYNC_SECRET_KEY, else the key kept in `home`, made there on its first use. Django checks
    sessions with it, so it must be secret, and the same from one start to the next (a new key logs
    every session out)."""
    given = os.environ.get("PULP_SYNC_SECRET_KEY")
    if given:
        return given
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


def _location(name: str) -> str:
    """A URL path of a proxy's location from the environment variable `name`: `/prefix/`, or empty for none."""
    text = os.environ.get(name, "")
    if text and not (text.startswith("/") and text.endswith("/") and text.isprintable() and " " not in text):
        raise ConfigurationError(f"{name}={text!r}: give a path that starts and ends with /, e.g. /protected/")
    return text


def _redis_url() -> str:
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    if urlsplit(url).scheme not in _REDIS_SCHEMES:
        raise ConfigurationError(f"REDIS_URL={redact(url)!r}: give redis://host:port/db (or rediss://, unix://)")
    return url


PULP_SYNC_HOME = _home()
PULP_SYNC_ARTIFACTS = PULP_SYNC_HOME / "artifacts"
PULP_SYNC_FSYNC = os.environ.get("PULP_SYNC_FSYNC", "") == "1"
PULP_SYNC_MAX_MANIFEST_BYTES = _positive_whole("PULP_SYNC_MAX_MANIFEST_BYTES", 64 * 1024 * 1024)
PULP_SYNC_ADDRESS_POLICY = _address_policy()
"""Which hosts and addresses syncs may connect to; checked again at every redirect and resolved address."""
PULP_SYNC_REPOSITORY_WAIT = _seconds("PULP_SYNC_REPOSITORY_WAIT", defaults.REPOSITORY_WAIT)
"""How long a sync waits for another sync of its repository to finish before it gives up."""
PULP_SYNC_WORKER_TTL = _seconds("PULP_SYNC_WORKER_TTL", defaults.WORKER_TTL, positive=True)
"""How long a worker's heartbeat lasts; the other workers fail the tasks of a worker whose heartbeat lapsed."""
PULP_SYNC_API_HEADER_TIMEOUT = _seconds("PULP_SYNC_API_HEADER_TIMEOUT", defaults.API_HEADER_TIMEOUT, positive=True)
"""How long an API client has to send a request's head; nginx disconnects it after."""
PULP_SYNC_API_BODY_TIMEOUT = _seconds("PULP_SYNC_API_BODY_TIMEOUT", defaults.API_BODY_TIMEOUT, positive=True)
"""How long an API client may pause between two parts of a request's body."""
PULP_SYNC_API_SEND_TIMEOUT = _seconds("PULP_SYNC_API_SEND_TIMEOUT", defaults.API_SEND_TIMEOUT, positive=True)
"""How long an API client may take to accept the next part of an answer."""
PULP_SYNC_API_CLIENT_REQUESTS = _positive_whole("PULP_SYNC_API_CLIENT_REQUESTS", defaults.API_CLIENT_REQUESTS,
                                                "requests")
"""Requests one client address may have in progress at once."""
PULP_SYNC_CONTENT_ACCEL_REDIRECT = _location("PULP_SYNC_CONTENT_ACCEL_REDIRECT")
"""The proxy's internal location that sends the content app's files; empty: gunicorn sends them."""
REDIS_URL = _redis_url()
PULP_SYNC_QUEUE = os.environ.get("PULP_SYNC_QUEUE", "")

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
    url = os.environ.get("DATABASE_URL")
    if url is not None and urlsplit(url).scheme not in _DATABASE_SCHEMES:
        raise ConfigurationError(
            f"DATABASE_URL={redact(url)!r}: give postgres://user@host:port/name, mysql://user@host:port/name or "
            "sqlite:////path, or unset it for sqlite under PULP_SYNC_HOME"
        )
    database = dj_database_url.config(default=f"sqlite:///{PULP_SYNC_HOME / 'db.sqlite3'}")
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

ALLOWED_HOSTS = os.environ.get("PULP_SYNC_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")
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
