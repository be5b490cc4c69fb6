"""`pulp-sync verify [--repair]` on a real store: each kind of disagreement found, repaired, and a re-sync heals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pulp_base.process_names import this_process
from pulp_sync import defaults
from pulp_sync.content.store import artifact_store
from pulp_sync.models import Artifact
from tests.pulp_sync.test_cli import invoke


def synced(server: str) -> None:
    result = invoke("sync", server + "good/PULP_MANIFEST", "--repository", "good")
    assert result.exit_code == 0, result.output


def verify(*options: str) -> tuple[int, dict[str, Any]]:
    """`pulp-sync verify --json OPTIONS`: its exit status and what it found."""
    result = invoke("verify", "--json", *options)
    return result.exit_code, json.loads(result.stdout)


def dead_process() -> str:
    """`host:pid` of a process that has exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return this_process().rpartition(":")[0] + f":{child.pid}"


def some_artifact() -> Artifact:
    return Artifact.objects.order_by("sha256").exclude(size=0).first()  # type: ignore[return-value]


def test_a_synced_store_agrees(db: Path, server: str) -> None:
    synced(server)
    result = invoke("verify")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Checked 11 artifacts (")
    assert "11 files and 1 repository versions" in result.stdout
    assert result.stdout.rstrip().endswith("The store and the database agree.")

    status, found = verify()
    assert status == 0 and found["problems"] == 0
    assert (found["artifacts"], found["files"], found["versions"]) == (11, 11, 1)
    assert found["bytes"] == sum(Artifact.objects.values_list("size", flat=True))


def test_verify_shows_its_progress(db: Path, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped, a line every PROGRESS_LINE_SECONDS (here shortened) while it reads the artifacts."""
    synced(server)
    monkeypatch.setattr(defaults, "PROGRESS_LINE_SECONDS", 0.0)
    result = invoke("verify")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines and lines[-1].startswith("Checking: 11/11 artifacts, "), lines


def test_a_lost_file_is_marked_missing_and_the_next_sync_fetches_it(db: Path, server: str) -> None:
    synced(server)
    lost = some_artifact()
    artifact_store().path_for(lost.sha256).unlink()

    status, found = verify()
    assert status == 1 and found["missing"] == [lost.sha256] and found["incomplete_versions"] == ["good version 1"]
    result = invoke("verify")
    assert result.exit_code == 1 and "incomplete: good version 1" in result.stdout
    assert result.stderr == "Error: 2 problems found; run `pulp-sync verify --repair`\n"

    status, repaired = verify("--repair")
    assert status == 1 and repaired["marked_missing"] == 1, "a version still lacks the file until a sync"
    assert repaired["incomplete_versions"] == ["good version 1"]
    again = invoke("verify", "--repair")
    assert again.stderr == "Error: 1 problem remains; sync the repositories named above again\n"
    after = invoke("verify")
    assert after.stderr == "Error: 1 problem found; sync the repositories named above again\n", \
        "a plain verify after a repair advises the step left, not the repair again"
    lost.refresh_from_db()
    assert lost.missing

    synced_again = invoke("sync", server + "good/PULP_MANIFEST", "--repository", "good", "--json")
    assert synced_again.exit_code == 0, synced_again.output
    report = json.loads(synced_again.stdout)
    assert (report["version"], report["artifacts_downloaded"], report["artifacts_skipped"]) == (None, 1, 10)
    lost.refresh_from_db()
    assert not lost.missing and verify()[0] == 0


def test_a_damaged_file_is_deleted_and_fetched_again(db: Path, server: str) -> None:
    synced(server)
    damaged = some_artifact()
    path = artifact_store().path_for(damaged.sha256)
    body = bytearray(path.read_bytes())
    body[len(body) // 2] ^= 0xFF
    path.write_bytes(bytes(body))

    status, found = verify()
    assert status == 1 and found["corrupt"] == [damaged.sha256] and found["missing"] == []
    status, repaired = verify("--repair")
    assert status == 1 and not path.exists() and repaired["marked_missing"] == 1

    assert invoke("sync", server + "good/PULP_MANIFEST", "--repository", "good").exit_code == 0
    assert verify()[0] == 0
    assert path.read_bytes() != bytes(body), "the verified bytes are back"


def test_orphans_and_left_behind_temp_files_are_removed(db: Path, server: str) -> None:
    synced(server)
    store = artifact_store()
    unrecorded = store.path_for("ab" * 32)
    unrecorded.parent.mkdir(parents=True, exist_ok=True)
    unrecorded.write_bytes(b"no row names me")
    stray = store.root / "artifact" / "stray.txt"
    stray.write_bytes(b"not at an artifact's path")
    dead = store.temp_dir / f"sync-abc@{dead_process()}"
    (dead / ".download-1.part").parent.mkdir()
    (dead / ".download-1.part").write_bytes(b"partial")
    (dead / "missing.spool").write_bytes(b"spool")
    loose = store.temp_dir / "loose.part"
    loose.write_bytes(b"x")
    running = store.temp_dir / f"sync-live@{this_process()}"
    running.mkdir()

    status, found = verify()
    assert status == 1
    assert sorted(found["orphans"]) == sorted([str(unrecorded), str(stray)])
    assert sorted(found["temp_files"]) == sorted(
        [str(dead / ".download-1.part"), str(dead / "missing.spool"), str(loose)]
    )
    assert (found["in_use"], found["missing"], found["corrupt"]) == (1, [], [])

    status, repaired = verify("--repair")
    assert status == 0 and repaired["problems"] == 0
    assert not unrecorded.exists() and not stray.exists() and not dead.exists() and not loose.exists()
    assert running.is_dir(), "a live sync's workspace is left alone"
    assert Artifact.objects.count() == 11 and all(store.path_for(a).is_file() for a in _digests())


def test_an_artifact_marked_missing_that_no_version_names_is_no_problem(db: Path, server: str) -> None:
    """What a sync killed between recording a batch and moving its files leaves: rows marked missing."""
    digest = "cd" * 32
    relative_path = artifact_store().relative_path_for(digest)
    Artifact.objects.create(sha256=digest, size=3, relative_path=relative_path, missing=True)
    status, found = verify()
    assert (status, found["marked_missing"], found["problems"]) == (0, 1, 0)


def test_verify_in_a_subprocess_on_an_empty_home(tmp_path: Path) -> None:
    env = {**os.environ, "PULP_SYNC_HOME": str(tmp_path)}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "pulp-sync"), "verify"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Checked 0 artifacts (0.0 MB), 0 files and 0 repository versions")


def _digests() -> list[str]:
    return list(Artifact.objects.values_list("sha256", flat=True))
