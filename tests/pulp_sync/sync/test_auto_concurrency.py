"""`download_concurrency = auto` in real syncs: the `pulp-sync` command line against fixture servers that
count what they are sent (requests in flight, connections open) and refuse what a real remote refuses.

The controller itself is tested against a simulated link (tests/downloaders/test_concurrency.py); here,
that a sync with it completes, within its bounds, whatever the remote and the process allow.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.limits import ConnectionLimit
from fixtures.profiles import PROFILES
from fixtures.server import RunningServer, StatsJson, serve_in_background
from tests.pulp_sync.conftest import write_repository
from tests.pulp_sync.test_databases import PULP_SYNC, PulpSync

FILES = 400
"""Small files of the test repository: enough for the limit to move, few enough for a busy machine."""
MOST = 12
"""max_concurrency of the syncs here: far below what many small files behind a wan latency would take."""
ALLOWED = 3
"""Requests at once the connection-limited remote allows: below the controller's first limit (AUTO_START)."""
MANY = 4000
"""Tiny files of the repository synced with few open files allowed."""
OPEN_FILES = 256
"""RLIMIT_NOFILE of the sync that runs in a process allowed few open files."""


@pytest.fixture(scope="module")
def remote_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("remote")
    write_repository(root / "repo", {f"d{n % 9}/f{n}.txt": b"file %d\n" % n * (1 + n % 7) for n in range(FILES)})
    write_repository(root / "many", {f"d{n % 31}/m{n}.txt": b"many %d\n" % n for n in range(MANY)})
    return root


@pytest.fixture
def pulp(tmp_path: Path) -> PulpSync:
    home = tmp_path / "home"
    return PulpSync({**os.environ, "PULP_SYNC_HOME": str(home)}, home)


@pytest.fixture(scope="module")
def far(remote_root: Path) -> Iterator[RunningServer]:
    """Many small files behind the wan profile's 40 ms to the first byte: more in flight always pays, so
    only max_concurrency holds the controller back."""
    with serve_in_background(remote_root, profile=PROFILES["wan"]) as server:
        yield server


def synced(pulp: PulpSync, server: RunningServer, *args: str) -> tuple[dict[str, Any], StatsJson]:
    """An auto sync of the test repository from `server` (up to MOST), its report and what the server saw."""
    server.reset_stats()
    report = pulp.sync(f"{server.url}/repo/PULP_MANIFEST", "--concurrency", "auto", "--max-concurrency", str(MOST),
                       *args)
    return report, server.stats()


def complete(report: dict[str, Any]) -> bool:
    return (report["artifacts_downloaded"], report["failures"]) == (FILES, 0)


@pytest.mark.parametrize("status", [503, 429])
def test_an_auto_sync_completes_against_a_connection_limited_remote(pulp: PulpSync, remote_root: Path,
                                                                     status: int) -> None:
    limit = ConnectionLimit(ALLOWED, status=status, retry_after=1)
    with serve_in_background(remote_root, profile=PROFILES["wan"], limit=limit) as server:
        report, seen = synced(pulp, server)
    assert complete(report), report
    assert seen["limited"] >= 1, "the controller starts above what the remote allows, and is told so"
    assert report["concurrency"] <= ALLOWED, report["concurrency_trajectory"]


@pytest.mark.parametrize("downloader", ["asyncio", "futures"])
def test_an_auto_sync_holds_no_more_connections_than_max_concurrency(pulp: PulpSync, far: RunningServer,
                                                                     downloader: str) -> None:
    report, seen = synced(pulp, far, "--downloader", downloader)
    assert complete(report), report
    assert seen["max_connections"] <= MOST and seen["max_in_flight"] <= MOST, seen
    assert report["connections"] == MOST and report["auto_concurrency"] is True, report
    assert max(change["limit"] for change in report["concurrency_trajectory"]) <= MOST


@pytest.mark.parametrize("processes", ["2", "auto"])
def test_a_split_auto_sync_holds_no_more_connections_in_all_than_max_concurrency(
        pulp: PulpSync, far: RunningServer, processes: str) -> None:
    report, seen = synced(pulp, far, "--processes", processes)
    assert complete(report), report
    assert seen["max_connections"] <= MOST and seen["max_in_flight"] <= MOST, seen
    assert report["connections"] == MOST, report


def _few_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


@pytest.mark.parametrize("concurrency", ["auto", "64"])
def test_an_auto_sync_completes_in_a_process_allowed_few_open_files(pulp: PulpSync, far: RunningServer,
                                                                     concurrency: str) -> None:
    """The most the controller may reach, the default max_concurrency of 64, holds 128 descriptors at most: a
    sync fits in 256, auto (which gets as far as the machine lets it) and fixed at that bound alike."""
    far.reset_stats()
    command = [str(PULP_SYNC), "sync", f"{far.url}/many/PULP_MANIFEST", "--json", "--concurrency", concurrency]
    done = subprocess.run(command, capture_output=True, text=True, env=pulp.env, timeout=240,
                          preexec_fn=_few_open_files)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["artifacts_downloaded"], report["failures"]) == (MANY, 0), report
    assert far.stats()["max_connections"] <= 64
