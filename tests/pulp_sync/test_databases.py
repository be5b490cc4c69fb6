"""The real `pulp-sync` command line on sqlite, PostgreSQL and MariaDB, each in a throwaway database.

Every command runs in a subprocess with DATABASE_URL and a temp PULP_SYNC_HOME, as an operator
would run it; what ended up in the database is read by a small Django script in another
subprocess (this test process has Django started on sqlite by conftest).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fixtures.server import serve_in_background
from pulp_sync import defaults
from tests.databases import ENGINES, throwaway_database
from tests.pulp_sync.conftest import manifest_line, write_repository

pytestmark = pytest.mark.slow

PULP_SYNC = Path(sys.executable).parent / "pulp-sync"
MANY = 2 * defaults.LOOKUP_BATCH + defaults.INSERT_BATCH // 2
"""Files in many/: three lookup batches and five insert batches, the last of each partly full."""
SCHEMA_RECORDS = {"contenttypes.ContentType", "auth.Permission"}
"""Rows that `migrate` writes itself: a fresh schema has them."""

_SEGMENT = "ü" * 60 + "😀" * 10 + "z" * 50
"""120 characters, 210 bytes in UTF-8: under the 255-byte limit of a file name on disk."""
LONG_PATH = "/".join([_SEGMENT] * 8) + "/" + "e" * (1024 - 8 * (len(_SEGMENT) + 1))
PATHS = {
    LONG_PATH: b"as long as a path may be",
    "Case.txt": b"capital",
    "case.txt": b"small",
    "CASE.TXT": b"capital",
    "café.txt": b"accent",
    "cafe.txt": b"no accent",
    "pad": b"no trailing space",
    "pad ": b"a trailing space, which MariaDB's PAD SPACE collations ignore",
    "日本語/ファイル.bin": b"three-byte characters",
}

_STATE = """
import json
from django.apps import apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from pulp_sync import database
database.setup()
from pulp_sync.models import Artifact, Repository
executor = MigrationExecutor(connection)
repositories = {}
for repository in Repository.objects.all():
    latest = repository.latest_version()
    paths = list(latest.content.values_list("relative_path", flat=True)) if latest else []
    repositories[repository.name] = {"version": latest and latest.number, "paths": paths}
print(json.dumps({
    "vendor": connection.vendor,
    "rows": {m._meta.label: m.objects.count() for m in apps.get_models() if not m._meta.proxy},
    "unapplied": [str(m) for m, _ in executor.migration_plan(executor.loader.graph.leaf_nodes())],
    "first_artifact": Artifact.objects.order_by("pk").values_list("pk", flat=True).first(),
    "repositories": repositories,
}))
"""
"""Prints what the database holds: rows per model (a missing table fails), migrations not applied,
and each repository's latest version with its paths."""

_FORGET_LATEST_MIGRATION = """
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from pulp_sync import database
database.setup()
[(app, name)] = MigrationLoader(connection).graph.leaf_nodes("pulp_sync")
MigrationRecorder(connection).record_unapplied(app, name)
print(f"{app}.{name}")
"""
"""Makes the schema look older than the code: migrate alone would now fail on the existing tables."""


@dataclass(frozen=True)
class PulpSync:
    """The CLI and the state of one database, with its own PULP_SYNC_HOME."""

    env: dict[str, str]
    home: Path

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """The command's outcome; `env` adds to (or overrides) this database's environment."""
        return subprocess.run([str(PULP_SYNC), *args], capture_output=True, text=True, env={**self.env, **(env or {})},
                              timeout=240)

    def sync(self, url: str, *args: str) -> dict[str, Any]:
        """`pulp-sync sync URL --json`, which must succeed; its report."""
        done = self.run("sync", url, "--json", "--downloader", "futures", *args)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def python(self, code: str) -> str:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=self.env, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def state(self) -> dict[str, Any]:
        return json.loads(self.python(_STATE))

    def stored_files(self) -> int:
        return sum(1 for path in (self.home / "artifacts").rglob("*") if path.is_file())


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fixture server over many/, shared/ (half of it is in many/), broken/ (a 404), paths/."""
    root = tmp_path_factory.mktemp("remote")
    many = {f"d{n % 40}/f{n}.txt": f"file {n}\n".encode() for n in range(MANY)}
    many[f"d0/f{MANY}-copy.txt"] = many["d0/f0.txt"]
    write_repository(root / "many", many)
    shared = {f"other/{path}": body for path, body in list(many.items())[:40]}
    shared.update({f"other/new{n}.txt": f"new {n}\n".encode() for n in range(40)})
    write_repository(root / "shared", shared)
    broken = {f"fresh{n}.txt": f"fresh {n}\n".encode() for n in range(20)}
    write_repository(root / "broken", broken, manifest_line("gone.txt", b"never on the server"))
    write_repository(root / "paths", PATHS)
    with serve_in_background(root) as server:
        yield server.url


@pytest.fixture(params=ENGINES)
def pulp(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PulpSync]:
    """pulp-sync on a new, empty database of each engine; migrated and checked to be that engine."""
    with throwaway_database(request.param, tmp_path) as url:
        home = tmp_path / "home"
        cli = PulpSync({**os.environ, "DATABASE_URL": url, "PULP_SYNC_HOME": str(home)}, home)
        migrated = cli.run("migrate")
        assert migrated.returncode == 0, migrated.stderr
        assert migrated.stdout.startswith(f"Database ready: {request.param} "), "DATABASE_URL chose the engine"
        yield cli


def test_sync_resync_share_fail_and_reset(pulp: PulpSync, remote: str) -> None:
    first = pulp.sync(remote + "many/PULP_MANIFEST")
    assert (first["version"], first["content_units"], first["failures"]) == (1, MANY + 1, 0)
    assert (first["artifacts_downloaded"], first["artifacts_skipped"]) == (MANY, 0), "the copy is fetched once"

    again = pulp.sync(remote + "many/PULP_MANIFEST")
    assert (again["version"], again["artifacts_downloaded"], again["artifacts_skipped"]) == (None, 0, MANY)

    shared = pulp.sync(remote + "shared/PULP_MANIFEST")
    assert (shared["version"], shared["artifacts_downloaded"], shared["artifacts_skipped"]) == (1, 40, 40)

    failed = pulp.run("sync", remote + "broken/PULP_MANIFEST", "--repository", "many", "--json")
    assert failed.returncode == 1 and "could not download gone.txt" in failed.stderr
    kept = json.loads(failed.stdout)
    assert (kept["version"], kept["failures"]) == (None, 1)

    state = pulp.state()
    assert state["repositories"]["many"]["version"] == 1, "the failed sync left version 1 current"
    assert len(state["repositories"]["many"]["paths"]) == MANY + 1
    assert state["rows"]["pulp_sync.Artifact"] == MANY + 40 + kept["artifacts_downloaded"] == pulp.stored_files()
    assert state["rows"]["pulp_sync.FileContent"] == MANY + 1 + 80
    assert state["rows"]["pulp_sync.RepositoryVersion"] == 2

    reset = pulp.run("reset", "--yes")
    assert reset.returncode == 0, reset.stderr
    assert_fresh(pulp)
    assert pulp.sync(remote + "shared/PULP_MANIFEST")["version"] == 1
    assert pulp.state()["first_artifact"] == 1, "ids start again, as in a new database"


def test_paths_are_kept_exactly(pulp: PulpSync, remote: str) -> None:
    report = pulp.sync(remote + "paths/PULP_MANIFEST")
    assert (report["version"], report["content_units"]) == (1, len(PATHS))
    stored = pulp.state()["repositories"]["paths"]["paths"]
    assert sorted(stored) == sorted(PATHS), "unicode, 1024 characters, case, accents and trailing spaces kept"


def test_reset_rebuilds_a_schema_older_than_the_code(pulp: PulpSync, remote: str) -> None:
    pulp.sync(remote + "paths/PULP_MANIFEST")
    forgotten = pulp.python(_FORGET_LATEST_MIGRATION).strip()
    assert pulp.state()["unapplied"] == [forgotten]

    reset = pulp.run("reset", "--yes")
    assert reset.returncode == 0, reset.stderr
    assert_fresh(pulp)


def test_every_reset_is_fresh(pulp: PulpSync, remote: str) -> None:
    """On sqlite the first reset makes a migrated template and later ones copy it; a template of
    other migrations (a stale digest) is replaced, never used."""
    url = pulp.env["DATABASE_URL"]
    sqlite_file = Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:") else None
    if sqlite_file is not None:
        sqlite_file.with_name(f"{sqlite_file.name}.template-0000000000000000").write_bytes(b"not a database")
    for _ in range(3):
        assert pulp.sync(remote + "shared/PULP_MANIFEST")["version"] == 1
        reset = pulp.run("reset", "--yes")
        assert reset.returncode == 0, reset.stderr
        assert_fresh(pulp)
    if sqlite_file is not None:
        templates = list(sqlite_file.parent.glob(f"{sqlite_file.name}.template-*"))
        assert len(templates) == 1 and not templates[0].name.endswith("0" * 16), templates


def assert_fresh(pulp: PulpSync) -> None:
    """Every migration applied, every table there and empty but for what migrate writes, no stored file."""
    state = pulp.state()
    assert state["unapplied"] == []
    data = {label: rows for label, rows in state["rows"].items() if label not in SCHEMA_RECORDS}
    assert "pulp_sync.Artifact" in data and set(data.values()) == {0}, data
    assert pulp.stored_files() == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_first_commands_at_once_on_an_empty_database_all_succeed(engine: str, tmp_path: Path, remote: str) -> None:
    """Four processes start on a database nobody has migrated (an API and workers coming up together): the
    schema lock has one migrate it and the others wait; then four first syncs name one new remote."""
    with throwaway_database(engine, tmp_path) as url:
        home = tmp_path / "home"
        cli = PulpSync({**os.environ, "DATABASE_URL": url, "PULP_SYNC_HOME": str(home)}, home)
        listings = [_started(cli, "repositories") for _ in range(4)]
        finished = [child.communicate(timeout=240) + (child.returncode,) for child in listings]
        assert [status for _, _, status in finished] == [0] * 4, [stderr for _, stderr, _ in finished]
        assert cli.state()["unapplied"] == []

        syncs = [_started(cli, "sync", remote + "paths/PULP_MANIFEST", "--remote", "shared-remote",
                          "--repository", f"repo-{n}", "--downloader", "futures") for n in range(4)]
        finished = [child.communicate(timeout=240) + (child.returncode,) for child in syncs]
        assert [status for _, _, status in finished] == [0] * 4, [stderr for _, stderr, _ in finished]
        rows = cli.state()["rows"]
        assert (rows["pulp_sync.Remote"], rows["pulp_sync.Repository"]) == (1, 4)


def _started(cli: PulpSync, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(PULP_SYNC), *args], env=cli.env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
