"""Starting Django on our settings, creating the schema, and the seed's `pclean` (reset).

Django's migration machinery (and through it every model) is imported only by the functions that
use it: a reset on sqlite needs none of it, and the harness runs one reset per run.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import pkgutil
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import django
from django.conf import settings
from django.db import DatabaseError, connection, connections
from django.utils.module_loading import import_string

from pulp_sync.store import artifact_store

__all__ = ["configure", "setup", "migrate", "ensure_schema", "reset", "describe", "explain"]

_WHAT_HAPPENED = (
    # (PostgreSQL SQLSTATEs, MySQL/MariaDB error numbers, words of sqlite's message): what it means for people
    ({"40P01", "40001"}, {1213, 1205}, ("database is locked",),
     "the database gave up on a lock (a deadlock, or another writer held it too long): run it again"),
    ({"22001"}, {1406}, ("too long",), "a value is too long for its column"),
    ({"23505", "23503"}, {1062, 1451, 1452}, ("UNIQUE constraint", "FOREIGN KEY constraint"),
     "the database refused a duplicate or a dangling reference"),
    ({"08001", "08006", "57P03"}, {2002, 2003, 2005, 2006, 2013, 1045, 1049},
     ("unable to open database file",), "cannot reach the database: is the server up, and DATABASE_URL right?"),
)
"""How database errors are told apart: by the driver's code where it has one (psycopg's `sqlstate`,
MySQLdb's errno), by sqlite's message where not."""


_SCHEMA_LOCK_NAME = "pulp_sync.schema"
_SERVER_LOCKS = {
    "postgresql": ("SELECT pg_advisory_lock(hashtext(%s))", "SELECT pg_advisory_unlock(hashtext(%s))"),
    "mysql": ("SELECT GET_LOCK(%s, 3600)", "SELECT RELEASE_LOCK(%s)"),  # MariaDB takes no -1 (forever)
}
"""How each database server takes and gives back the schema lock (see _schema_lock)."""


def explain(error: DatabaseError) -> str:
    """A database error in one line that says what happened, with the driver's own message after it."""
    cause = error.__cause__
    sqlstate = getattr(cause, "sqlstate", None)
    errno = cause.args[0] if cause is not None and cause.args and isinstance(cause.args[0], int) else None
    message = " ".join(str(error).split())
    for sqlstates, errnos, words, meaning in _WHAT_HAPPENED:
        if sqlstate in sqlstates or errno in errnos or any(word in message for word in words):
            return f"{meaning} ({message})"
    if "connection" in message.lower() and "refused" in message.lower():
        return f"cannot reach the database: is the server up, and DATABASE_URL right? ({message})"
    return f"database error: {message}"


def configure() -> None:
    """Point Django at `pulp_sync.settings` (unless DJANGO_SETTINGS_MODULE names other settings) and
    create PULP_SYNC_HOME, where the sqlite database is: enough for settings and a connection,
    without loading any app's models."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pulp_sync.settings")
    Path(settings.PULP_SYNC_HOME).mkdir(parents=True, exist_ok=True)


def setup() -> None:
    """Start Django on our settings (see `configure`), models and all."""
    configure()
    django.setup()


def migrate() -> None:
    """Bring the schema up to date, quietly; a no-op when it already is. Under the schema lock, so any
    number of processes starting on an empty database at once (an API, workers, syncs) migrate it once."""
    from django.core.management import call_command

    setup()
    with _schema_lock():
        call_command("migrate", verbosity=0, interactive=False)


@contextmanager
def _schema_lock() -> Iterator[None]:
    """One process at a time changes the schema: a PostgreSQL advisory lock, a MariaDB/MySQL named lock
    (both held by the connection, so a process that dies lets go of them), or for sqlite an flock on a
    file beside the database. A second process waits, then finds its migrations done."""
    if connection.vendor in _SERVER_LOCKS:
        take, give = _SERVER_LOCKS[connection.vendor]
        with connection.cursor() as cursor:
            cursor.execute(take, [_SCHEMA_LOCK_NAME])
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute(give, [_SCHEMA_LOCK_NAME])
        return
    sqlite_file = _sqlite_file()
    lock_path = Path(f"{sqlite_file}.migrate-lock") if sqlite_file else Path(settings.PULP_SYNC_HOME) / "migrate.lock"
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_schema() -> None:
    """`migrate` unless every migration on disk is already recorded as applied.

    The check is one query and a directory listing per app; a no-op `migrate` costs ~60 ms (it
    loads the migration graph and emits post_migrate, which queries content types and
    permissions), paid by every sync. Anything unexpected (no table yet, a squashed migration)
    falls through to `migrate`, which is always right.
    """
    if not _migrations_on_disk() <= _applied_migrations():
        migrate()


def reset() -> None:
    """A fresh, empty schema and an empty artifact store: the state before a benchmark run.

    sqlite's file is replaced by a copy of a freshly migrated template (made on first use, next to
    it). A server database whose schema is current is emptied by Django's `flush` (TRUNCATE,
    sequences restarted): the same state as dropping and migrating, several times quicker. Any
    other server schema (older, or half made) is dropped and migrated afresh. A store that could not
    be emptied raises StoreError after the database is reset.
    """
    from django.core.management import call_command

    configure()
    sqlite_file = _sqlite_file()
    connections.close_all()
    try:
        artifact_store().remove_all()
    finally:  # files it could not delete are the store's error to report; the schema is fresh all the same
        if sqlite_file is not None:
            _reset_sqlite(sqlite_file)
        else:
            setup()
            if _schema_is_current():
                call_command("flush", verbosity=0, interactive=False)
            else:
                _drop_tables()
            migrate()


def describe() -> str:
    """The database in use, for messages: the sqlite file, or engine and name (never credentials)."""
    sqlite_file = _sqlite_file()
    if sqlite_file is not None:
        return f"sqlite {sqlite_file}"
    database = settings.DATABASES["default"]
    return f"{connection.vendor} {database.get('NAME')} on {database.get('HOST') or 'localhost'}"


def _sqlite_file() -> Path | None:
    database = settings.DATABASES["default"]
    name = str(database.get("NAME", ""))
    if database["ENGINE"] != "django.db.backends.sqlite3" or name in ("", ":memory:") or name.startswith("file:"):
        return None
    return Path(name)


def _reset_sqlite(sqlite_file: Path) -> None:
    """Replace the database with a copy of the migrated template: a file copy instead of running
    every migration, which takes most of a reset's time. The template's name carries a digest of
    the migration files, so changing any migration makes (and uses) a new one."""
    for path in (sqlite_file, Path(f"{sqlite_file}-wal"), Path(f"{sqlite_file}-shm")):
        path.unlink(missing_ok=True)
    template = sqlite_file.with_name(f"{sqlite_file.name}.template-{_migrations_digest()[:16]}")
    if template.exists():
        shutil.copyfile(template, sqlite_file)
        return
    migrate()
    connections.close_all()
    for stale in sqlite_file.parent.glob(f"{sqlite_file.name}.template-*"):
        stale.unlink(missing_ok=True)
    partial = template.with_name(f"{template.name}.{os.getpid()}.part")
    shutil.copyfile(sqlite_file, partial)
    os.replace(partial, template)


def _migrations_digest() -> str:
    """sha256 over every installed app's migration files (names and contents) and Django's version."""
    digest = hashlib.sha256(django.get_version().encode())
    for app, name, path in sorted(_migration_files()):
        digest.update(f"{app}.{name}".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _migration_files() -> Iterator[tuple[str, str, Path]]:
    """(app label, migration name, file) of every installed app's migrations, named as Django's
    loader names them, found without importing a migration, a model or even the app's package
    (django.contrib.auth's imports most of Django)."""
    for label, package in _migration_packages():
        parent, _, last = package.rpartition(".")
        spec = importlib.util.find_spec(parent) if parent else None
        for location in (spec.submodule_search_locations or []) if spec else []:
            folder = Path(location) / last
            for module in pkgutil.iter_modules([str(folder)]):
                if not module.ispkg and module.name[0] not in "_~":
                    yield label, module.name, folder / f"{module.name}.py"


def _migration_packages() -> Iterator[tuple[str, str]]:
    """(app label, migrations package) per INSTALLED_APPS entry, an app's module or its AppConfig."""
    for entry in settings.INSTALLED_APPS:
        try:
            is_module = importlib.util.find_spec(entry) is not None
        except ModuleNotFoundError:  # "package.apps.SomeConfig": its parent is not a package
            is_module = False
        name, label = entry, entry.rpartition(".")[2]
        if not is_module:
            config = import_string(entry)
            name = config.name
            label = getattr(config, "label", name.rpartition(".")[2])
        package = settings.MIGRATION_MODULES.get(label, f"{name}.migrations")
        if package is not None:
            yield label, package


def _migrations_on_disk() -> set[tuple[str, str]]:
    """(app label, migration name) of every migration file of every installed app."""
    return {(label, name) for label, name, _ in _migration_files()}


def _applied_migrations() -> set[tuple[str, str]]:
    """What django_migrations records as applied; empty when there is no such table yet."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT app, name FROM django_migrations")
            return {(app, name) for app, name in cursor.fetchall()}
    except DatabaseError:
        return set()


def _schema_is_current() -> bool:
    """Every migration is applied and every model's table exists, so emptying them gives a fresh schema."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return False
    introspection = connection.introspection
    return len(introspection.django_table_names(only_existing=True)) == len(introspection.django_table_names())


def _drop_tables() -> None:
    """Drop the tables of every installed model and Django's migration record, on any engine.

    `delete_model` also drops a model's implicit many-to-many tables. A proxy model (DRF's
    TokenProxy) shares its concrete model's table, so it is skipped. Constraint checks are off
    while dropping (MySQL refuses to drop a referenced table otherwise; PostgreSQL's DROP TABLE
    ... CASCADE needs no help).
    """
    from django.apps import apps
    from django.db.migrations.recorder import MigrationRecorder

    existing = set(connection.introspection.table_names())
    models = [*apps.get_models(), MigrationRecorder.Migration]
    with connection.constraint_checks_disabled(), connection.schema_editor() as editor:
        for model in models:
            if model._meta.managed and not model._meta.proxy and model._meta.db_table in existing:
                editor.delete_model(model)
