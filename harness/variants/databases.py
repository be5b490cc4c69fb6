"""The database a variant syncs into: `db = "sqlite" | "postgresql" | "mysql"` or any DATABASE_URL.

The short names point at the local servers (PostgreSQL on 5432 with trust auth, MariaDB on 3306 as
root) and at a database of the harness's own, `pulp_sync_bench`, so a benchmark never resets an
operator's `pulp_sync` database. `pulp-sync reset` drops and recreates tables but cannot create the
database itself, so the harness creates a missing one before the first run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol
from urllib.parse import urlsplit

import dj_database_url

from harness.errors import HarnessError

__all__ = ["DatabaseError", "ALIASES", "database_url", "server_database_url", "create_database", "drop_database"]

BENCH_DATABASE = "pulp_sync_bench"
ALIASES: dict[str, str | None] = {
    "sqlite": None,
    "postgresql": f"postgres://postgres@127.0.0.1:5432/{BENCH_DATABASE}",
    "mysql": f"mysql://root@127.0.0.1:3306/{BENCH_DATABASE}",
}
"""Short names of `db`; None is pulp-sync's default, sqlite under the run's PULP_SYNC_HOME."""
_POSTGRES = "django.db.backends.postgresql"
_MYSQL = "django.db.backends.mysql"


class DatabaseError(HarnessError, RuntimeError):
    """A variant's database cannot be reached or created; the message names it (never a password)."""


def database_url(db: str | None) -> str | None:
    """The DATABASE_URL of a variant's `db` (a short name or a URL); None for the sqlite default."""
    if db is None:
        return None
    return ALIASES[db] if db in ALIASES else db


def server_database_url(db: str | None) -> str | None:
    """The DATABASE_URL of a pulp-sync server the harness runs for a pulp-api variant
    (harness.variants.pulp_sync_server): for a short name, a database of its own (`pulp_sync_bench_server`),
    because the other variants' runs reset `pulp_sync_bench` and would pull the tables from under the
    running server."""
    url = database_url(db)
    if url is None or db not in ALIASES:
        return url
    return url.replace(f"/{BENCH_DATABASE}", f"/{BENCH_DATABASE}_server")


def create_database(url: str) -> None:
    """Create the database `url` names on its server when it is not there yet (sqlite needs nothing)."""
    config = _config(url)
    name = config["NAME"]
    if config["ENGINE"] == _POSTGRES:
        with _admin_cursor(config) as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if cursor.fetchone() is None:
                cursor.execute(f'CREATE DATABASE "{name}"')
    elif config["ENGINE"] == _MYSQL:
        with _admin_cursor(config) as cursor:
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4")


def drop_database(url: str) -> None:
    """Drop the database `url` names, closing its other connections first on PostgreSQL."""
    config = _config(url)
    name = config["NAME"]
    if config["ENGINE"] == _POSTGRES:
        with _admin_cursor(config) as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    elif config["ENGINE"] == _MYSQL:
        with _admin_cursor(config) as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")


def _config(url: str) -> dict[str, Any]:
    try:
        return dict(dj_database_url.parse(url))
    except ValueError as error:
        raise DatabaseError(f"db {_without_password(url)!r} is not a database URL: {error}") from error


class _Connection(Protocol):
    """What _admin_cursor needs of a DB-API connection, psycopg's or MySQLdb's."""

    def cursor(self) -> Any: ...

    def close(self) -> None: ...


@contextmanager
def _admin_cursor(config: dict[str, Any]) -> Iterator[Any]:
    """An autocommit cursor on the server of `config`, outside the database it names."""
    where = f"{config['ENGINE'].rsplit('.', 1)[-1]} on {config.get('HOST') or 'localhost'}:{config.get('PORT') or ''}"
    connection: _Connection
    try:
        if config["ENGINE"] == _POSTGRES:
            import psycopg

            connection = psycopg.connect(
                host=config.get("HOST") or None, port=config.get("PORT") or None, user=config.get("USER") or None,
                password=config.get("PASSWORD") or None, dbname="postgres", autocommit=True,
            )
        else:
            import MySQLdb

            connection = MySQLdb.connect(
                host=config.get("HOST") or "localhost", port=int(config.get("PORT") or 3306),
                user=config.get("USER") or "root", passwd=config.get("PASSWORD") or "",
            )
    except ImportError as error:
        raise DatabaseError(
            f"{where}: its driver is not installed ({error}); pip install -e .[postgres,mysql]") from error
    except Exception as error:  # each driver has its own error tree; all mean "cannot connect"
        raise DatabaseError(f"{where}: cannot connect ({' '.join(str(error).split())})") from error
    try:
        cursor = connection.cursor()
        try:
            yield cursor
        finally:
            cursor.close()
    finally:
        connection.close()


def _without_password(url: str) -> str:
    password = urlsplit(url).password
    return url.replace(f":{password}@", ":***@") if password else url
