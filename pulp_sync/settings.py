"""Django settings of the sync service: state under PULP_SYNC_HOME, the database from DATABASE_URL.

Loaded through `DJANGO_SETTINGS_MODULE=pulp_sync.settings` (set by `pulp_sync.setup()` and the
CLI). Everything is read from the environment once, when Django starts:

- `PULP_SYNC_HOME` (default `./.pulp-sync`): the sqlite database `db.sqlite3` and the artifact
  store `artifacts/`, whose temp dir `artifacts/tmp/` is on the same filesystem so that adopting a
  download is one atomic rename.
- `DATABASE_URL`: another database (`postgres://...`, `mysql://...`), parsed by dj-database-url.
- `PULP_SYNC_FSYNC=1`: flush each artifact and its directory to disk when it is adopted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url

__all__ = [
    "PULP_SYNC_HOME",
    "PULP_SYNC_ARTIFACTS",
    "PULP_SYNC_FSYNC",
    "DATABASES",
    "INSTALLED_APPS",
    "SECRET_KEY",
    "USE_TZ",
    "TIME_ZONE",
    "DEFAULT_AUTO_FIELD",
]

PULP_SYNC_HOME = Path(os.environ.get("PULP_SYNC_HOME") or ".pulp-sync").resolve()
PULP_SYNC_ARTIFACTS = PULP_SYNC_HOME / "artifacts"
PULP_SYNC_FSYNC = os.environ.get("PULP_SYNC_FSYNC", "") == "1"

_SQLITE_OPTIONS: dict[str, Any] = {
    # WAL lets readers run beside the one writer; synchronous=NORMAL is WAL's documented safe pairing
    # (a power cut may lose the last commits, never corrupt the file).
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
    # Writers take the lock when their transaction begins, so a busy database waits (up to
    # `timeout` seconds) instead of failing half-way through a transaction.
    "transaction_mode": "IMMEDIATE",
    "timeout": 30,
}


def _database() -> dict[str, Any]:
    """DATABASE_URL if given, else sqlite under PULP_SYNC_HOME; sqlite gets WAL and a busy timeout."""
    database = dj_database_url.config(default=f"sqlite:///{PULP_SYNC_HOME / 'db.sqlite3'}")
    if database["ENGINE"] == "django.db.backends.sqlite3":
        database["OPTIONS"] = {**_SQLITE_OPTIONS, **database.get("OPTIONS", {})}
    return database


DATABASES = {"default": _database()}
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "pulp_sync.apps.PulpSyncConfig"]
SECRET_KEY = os.environ.get("PULP_SYNC_SECRET_KEY", "pulp-sync-has-no-sessions-yet")
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
