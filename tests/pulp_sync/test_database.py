"""pulp_sync.database: the schema check every command makes, and a sqlite reset that loads no models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import DatabaseError, DataError, IntegrityError, OperationalError, ProgrammingError, connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from pulp_sync import database


def test_migrations_on_disk_are_the_ones_djangos_loader_finds(db: Path) -> None:
    found = database._migrations_on_disk()
    assert found == set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
    assert ("pulp_sync", "0001_initial") in found and ("authtoken", "0001_initial") in found


def test_ensure_schema_leaves_a_current_schema_alone(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(database, "migrate", lambda: calls.append("migrate"))
    database.ensure_schema()
    assert calls == []


def test_ensure_schema_migrates_when_a_migration_is_not_applied(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app, name = max(migration for migration in database._migrations_on_disk() if migration[0] == "pulp_sync")
    MigrationRecorder(connection).record_unapplied(app, name)
    calls: list[str] = []
    monkeypatch.setattr(database, "migrate", lambda: calls.append("migrate"))
    database.ensure_schema()
    assert calls == ["migrate"]


def test_ensure_schema_creates_the_schema_of_an_empty_database(tmp_path: Path) -> None:
    """A new PULP_SYNC_HOME: no django_migrations table yet, so the check migrates (in a fresh process)."""
    code = (
        "from pulp_sync import database\n"
        "database.setup(); database.ensure_schema()\n"
        "print(sorted(database._migrations_on_disk() - database._applied_migrations()))\n"
    )
    assert _python(code, tmp_path) == "[]"


def test_a_sqlite_reset_from_its_template_loads_no_model(tmp_path: Path) -> None:
    """The harness resets before every run: from the second reset on, it is a file copy that needs
    neither Django's models nor its migration machinery (they are most of a process's start-up)."""
    code = (
        "import sys\n"
        "from pulp_sync import database\n"
        "database.reset()\n"
        "print(sorted(m for m in ('django.db.models', 'django.db.migrations') if m in sys.modules))\n"
    )
    _python(code, tmp_path)
    assert _python(code, tmp_path) == "[]"
    assert len(list(tmp_path.glob("db.sqlite3.template-*"))) == 1


def _python(code: str, home: Path) -> str:
    env = {**os.environ, "PULP_SYNC_HOME": str(home)}
    env.pop("DATABASE_URL", None)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("error", "meaning"),
    [
        (OperationalError("database is locked"), "the database gave up on a lock"),
        (DataError("value too long for type character varying(255)"), "a value is too long for its column"),
        (IntegrityError("UNIQUE constraint failed: pulp_sync_remote.name"), "the database refused a duplicate"),
        (ProgrammingError("relation does not exist"), "database error: relation does not exist"),
    ],
)
def test_database_errors_say_what_happened(error: DatabaseError, meaning: str) -> None:
    assert database.explain(error).startswith(meaning)
