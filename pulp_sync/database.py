"""Starting Django on our settings, creating the schema, and the seed's `pclean` (reset)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import django
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from pulp_sync.store import artifact_store

__all__ = ["setup", "migrate", "reset", "describe"]


def setup() -> None:
    """Start Django with `pulp_sync.settings` (unless DJANGO_SETTINGS_MODULE names other settings).

    Creates PULP_SYNC_HOME, where the sqlite database is, if it is not there yet.
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pulp_sync.settings")
    django.setup()
    Path(settings.PULP_SYNC_HOME).mkdir(parents=True, exist_ok=True)


def migrate() -> None:
    """Bring the schema up to date, quietly; a no-op when it already is."""
    call_command("migrate", verbosity=0, interactive=False)


def reset() -> None:
    """A fresh, empty schema and an empty artifact store: the state before a benchmark run.

    sqlite's file is replaced by a copy of a freshly migrated template (made on first use, next to
    it). A server database whose schema is current is emptied by Django's `flush` (TRUNCATE,
    sequences restarted): the same state as dropping and migrating, several times quicker. Any
    other server schema (older, or half made) is dropped and migrated afresh.
    """
    sqlite_file = _sqlite_file()
    connections.close_all()
    artifact_store().remove_all()
    if sqlite_file is not None:
        _reset_sqlite(sqlite_file)
        return
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
    migrations = MigrationLoader(None, ignore_no_migrations=True).disk_migrations
    for (app, name), migration in sorted(migrations.items()):
        digest.update(f"{app}.{name}".encode())
        digest.update(Path(str(sys.modules[type(migration).__module__].__file__)).read_bytes())
    return digest.hexdigest()


def _schema_is_current() -> bool:
    """Every migration is applied and every model's table exists, so emptying them gives a fresh schema."""
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
    existing = set(connection.introspection.table_names())
    models = [*apps.get_models(), MigrationRecorder.Migration]
    with connection.constraint_checks_disabled(), connection.schema_editor() as editor:
        for model in models:
            if model._meta.managed and not model._meta.proxy and model._meta.db_table in existing:
                editor.delete_model(model)
