"""Many syncs at once on sqlite, PostgreSQL and MariaDB, as an operator's service runs them.

Each sync is its own `pulp-sync sync` process, started together with the others: four repositories
that share most of their files (two of them listing them in reverse order, so their inserts meet the
others' in the opposite order), and six syncs of one repository nobody has synced yet. Every round
starts from an empty database and store, so the shared rows are new to all of them at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.server import serve_in_background
from pulp_sync import defaults
from tests.databases import ENGINES, throwaway_database
from tests.pulp_sync.conftest import manifest_line
from tests.pulp_sync.test_databases import PULP_SYNC, PulpSync

pytestmark = pytest.mark.slow

SHARED = defaults.INSERT_BATCH + defaults.INSERT_BATCH // 2
"""Files every repository lists: more than one batch of inserts, so that a sync holds no lock on the
first batch's rows while it inserts the second (a deadlock with only one would prove less)."""
OWN = 50
"""Files only one repository lists."""
REPOSITORIES = 4
ROUNDS = 5

_DUPLICATES = """
import json
from django.db.models import Count
from pulp_sync import database
database.setup()
from pulp_sync.models import Artifact, FileContent, RepositoryContent
print(json.dumps({
    "artifacts": Artifact.objects.values("sha256").annotate(n=Count("pk")).filter(n__gt=1).count(),
    "content": FileContent.objects.values("key").annotate(n=Count("pk")).filter(n__gt=1).count(),
    "memberships": RepositoryContent.objects.values("version", "content").annotate(n=Count("pk"))
                   .filter(n__gt=1).count(),
}))
"""
"""Counts the keys held by more than one row: 0, 0, 0 when no insert went in twice."""


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """repo-0 ... repo-3 share SHARED files and have OWN of their own; repo-1 and repo-3 list theirs
    backwards. same/ is the one repository six syncs go for at once."""
    root = tmp_path_factory.mktemp("remote")
    shared = {f"shared/f{n}.txt": f"shared {n}\n".encode() for n in range(SHARED)}
    for number in range(REPOSITORIES):
        files = {**shared, **{f"own/f{n}.txt": f"repo {number} file {n}\n".encode() for n in range(OWN)}}
        lines = [manifest_line(path, body) for path, body in files.items()]
        _write(root / f"repo-{number}", files, lines[::-1] if number % 2 else lines)
    same = {f"f{n}.txt": f"same {n}\n".encode() for n in range(300)}
    _write(root / "same", same, [manifest_line(path, body) for path, body in same.items()])
    with serve_in_background(root) as server:
        yield server.url


def _write(folder: Path, files: dict[str, bytes], lines: list[str]) -> None:
    for path, body in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(body)
    (folder / "PULP_MANIFEST").write_text("".join(lines))


@pytest.fixture(params=ENGINES)
def pulp(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PulpSync]:
    """pulp-sync on a new database of each engine, migrated once (the first commands at once on an
    empty database are test_databases' own test)."""
    with throwaway_database(request.param, tmp_path) as url:
        home = tmp_path / "home"
        cli = PulpSync({**os.environ, "DATABASE_URL": url, "PULP_SYNC_HOME": str(home)}, home)
        migrated = cli.run("migrate")
        assert migrated.returncode == 0, migrated.stderr
        yield cli


@pytest.mark.parametrize(("processes", "rounds"), [("1", ROUNDS), ("3", 2)], ids=["whole", "split"])
def test_syncs_sharing_content_started_together_all_complete(
        pulp: PulpSync, remote: str, processes: str, rounds: int) -> None:
    """Split in three, twelve processes record artifacts at once, in overlapping digest ranges."""
    for round_ in range(rounds):
        reset = pulp.run("reset", "--yes")
        assert reset.returncode == 0, reset.stderr
        finished = _together(pulp, [
            ["sync", f"{remote}repo-{n}/PULP_MANIFEST", "--downloader", ("asyncio", "futures")[n % 2],
             "--processes", processes]
            for n in range(REPOSITORIES)
        ])
        assert [status for status, _ in finished] == [0] * REPOSITORIES, f"round {round_}: {finished}"
        state = pulp.state()
        assert {name: repo["version"] for name, repo in state["repositories"].items()} == {
            f"repo-{n}": 1 for n in range(REPOSITORIES)}
        assert {len(repo["paths"]) for repo in state["repositories"].values()} == {SHARED + OWN}
        assert state["rows"]["pulp_sync.Artifact"] == SHARED + REPOSITORIES * OWN == pulp.stored_files()
        assert state["rows"]["pulp_sync.FileContent"] == SHARED + REPOSITORIES * OWN
        assert pulp.python(_DUPLICATES).strip() == '{"artifacts": 0, "content": 0, "memberships": 0}'
        verified = pulp.run("verify")
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_six_syncs_of_one_new_repository_make_one_version(pulp: PulpSync, remote: str) -> None:
    finished = _together(pulp, [["sync", f"{remote}same/PULP_MANIFEST", "--downloader", "futures"]] * 6)
    assert [status for status, _ in finished] == [0] * 6, finished
    state = pulp.state()
    assert state["repositories"] == {"same": {"version": 1, "paths": state["repositories"]["same"]["paths"]}}
    assert len(state["repositories"]["same"]["paths"]) == 300
    assert state["rows"]["pulp_sync.RepositoryVersion"] == 1
    assert state["rows"]["pulp_sync.Remote"] == state["rows"]["pulp_sync.Repository"] == 1


def _together(pulp: PulpSync, commands: list[list[str]]) -> list[tuple[int, str]]:
    """Start every command at once; each one's exit status and stderr."""
    children = [subprocess.Popen([str(PULP_SYNC), *command], env=pulp.env, text=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for command in commands]
    errors = [child.communicate(timeout=240)[1] for child in children]
    return [(child.returncode, error) for child, error in zip(children, errors, strict=True)]


def test_a_sync_waits_for_the_one_running_on_its_repository_within_its_bound(pulp: PulpSync, remote: str) -> None:
    """The first sync is held to 40 requests a second (7.5 s); one that may wait half a second gives up
    saying why, one that may wait longer says it waits, then finds nothing left to do. The two start
    together, so that on a busy machine neither's start-up eats into the first's time."""
    url = f"{remote}same/PULP_MANIFEST"
    first = _sync_in_background(pulp, url, "--rate-limit", "40")
    time.sleep(1.5)
    impatient = _sync_in_background(pulp, url, "--json", env={"PULP_SYNC_REPOSITORY_WAIT": "0.5"})
    patient = _sync_in_background(pulp, url, "--json")
    (_, first_errors), (_, impatient_errors), (patient_out, patient_errors) = (
        child.communicate(timeout=120) for child in (first, impatient, patient)
    )
    assert first_errors == "" and first.returncode == 0
    assert impatient.returncode == 1
    assert "another sync of repository same still runs after 0.5 s; nothing was changed" in impatient_errors
    assert patient.returncode == 0 and "Another sync of repository same is running: waiting" in patient_errors
    assert json.loads(patient_out)["version"] is None, "the first made the version; nothing was left to do"


def _sync_in_background(
    pulp: PulpSync, url: str, *options: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen([str(PULP_SYNC), "sync", url, *options], env={**pulp.env, **(env or {})}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
