"""pulp_sync.sync.split.planning: one sync's downloads split across processes, into one store and one version.

The rules (how many processes, how the spool is cut, each process's share of the remote's budget) are
tested as functions; the split sync itself through the real `pulp-sync` command line on each database,
with its children killed and stopped as an operator's machine would kill and stop them, and against a
fixture server that counts what it is sent, to hold the split sync to the remote's concurrency and rate.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from downloaders import DownloaderSettings
from fixtures.profiles import PROFILES
from fixtures.server import RunningServer, StatsJson, serve_in_background
from pulp_base.download_processes import AUTO, MAX_PROCESSES, parse_processes, processes_text
from pulp_sync import defaults
from pulp_sync.sync.split.planning import budget_share, how_many, most_processes, split, together
from tests.databases import ENGINES, throwaway_database
from tests.pulp_sync.conftest import write_repository
from tests.pulp_sync.test_databases import PULP_SYNC, PulpSync

FILES = 300
"""Files in the test repository: 100 per shard of three."""


@pytest.mark.parametrize(("given", "stored"), [("auto", AUTO), ("AUTO", AUTO), ("1", 1), ("3", 3), (8, 8)])
def test_processes_are_a_number_from_one_or_auto(given: str | int, stored: int) -> None:
    assert parse_processes(given) == stored
    assert processes_text(stored) == str(given).lower()


@pytest.mark.parametrize("given", ["0", "-1", "1.5", "lots", "", str(MAX_PROCESSES + 1), "02"])
def test_anything_else_is_refused_with_a_sentence(given: str) -> None:
    with pytest.raises(ValueError, match="download_processes must be"):
        parse_processes(given)
    with pytest.raises(ValueError, match="^processes must be"):
        parse_processes(given, "processes")


def test_how_many_processes_a_sync_uses() -> None:
    assert how_many(4, 10_000, 10**6, 10) == 4
    assert how_many(4, 3, 10**9, 10) == 3, "never more processes than files"
    assert how_many(4, 1, 10**9, 10) == how_many(4, 0, 0, 10) == 1
    files, size = defaults.AUTO_FILES_PER_PROCESS, defaults.AUTO_BYTES_PER_PROCESS
    assert how_many(AUTO, 10_000, 10**7, 10, cpus=2) == 2
    assert how_many(AUTO, 100, 10**7, 10, cpus=2) == 1, "a hundred small files stay one process"
    assert how_many(AUTO, 100, 408 * 10**6, 10, cpus=2) == 2, "408 MB are worth two, however few the files"
    assert how_many(AUTO, 6 * files + 1, 0, 10, cpus=16) == 6, "no process for fewer than AUTO_FILES_PER_PROCESS"
    assert how_many(AUTO, 100, 3 * size, 10, cpus=16) == 3, "nor for fewer than AUTO_BYTES_PER_PROCESS bytes"
    assert how_many(AUTO, 100 * files, 0, 20, cpus=16) == 16
    assert how_many(AUTO, 3, 10 * size, 10, cpus=16) == 3, "never more processes than files"


def test_never_more_processes_than_the_remotes_budget_has_connections() -> None:
    assert how_many(8, 10_000, 10**6, 3) == 3
    assert how_many(AUTO, 10_000, 10**9, 2, cpus=16) == 2, "auto too"
    assert most_processes(DownloaderSettings(download_concurrency=6)) == 6
    assert most_processes(DownloaderSettings(download_concurrency=6, rate_limit=0.5)) == 6, "any rate divides"
    tiny = 1.5 / 2_147_483  # one start in about 16 days: half of it would be a rate no engine takes
    assert most_processes(DownloaderSettings(download_concurrency=6, rate_limit=tiny)) == 1


@pytest.mark.parametrize(("concurrency", "rate", "count"), [(10, 50.0, 2), (10, 50.0, 4), (3, 1.0, 3), (7, None, 3)])
def test_the_shards_shares_add_up_to_the_remotes_budget(concurrency: int, rate: float | None, count: int) -> None:
    whole = DownloaderSettings(download_concurrency=concurrency, rate_limit=rate, max_retries=7)
    shares = [budget_share(whole, index, count) for index in range(count)]
    connections = [share.download_concurrency for share in shares]
    assert sum(connections) == concurrency and max(connections) - min(connections) <= 1 and min(connections) >= 1
    if rate is None:
        assert {share.rate_limit for share in shares} == {None}
    else:
        assert sum(share.rate_limit or 0 for share in shares) == pytest.approx(rate)
    assert {share.max_retries for share in shares} == {7}, "every other setting is the remote's"
    assert budget_share(whole, 0, 1) == whole, "an unsplit sync has the whole budget"


@pytest.mark.parametrize(("maximum", "count"), [(64, 2), (64, 3), (5, 4), (8, 8)])
def test_with_auto_concurrency_the_shards_divide_max_concurrency(maximum: int, count: int) -> None:
    whole = DownloaderSettings(auto_concurrency=True, max_concurrency=maximum, download_concurrency=10)
    shares = [budget_share(whole, index, count) for index in range(count)]
    assert sum(share.max_concurrency for share in shares) == maximum
    assert min(share.max_concurrency for share in shares) >= 1
    assert all(share.auto_concurrency for share in shares)
    assert all(share.download_concurrency <= share.max_concurrency for share in shares), "a valid fallback"
    assert most_processes(whole) == maximum, "at least one connection a shard, of max_concurrency"
    assert how_many(AUTO, 10**6, 10**12, most_processes(whole), cpus=16) == min(16, maximum)


def test_the_shards_limits_add_up_over_time() -> None:
    first = [(0.0, 4), (1.0, 8), (3.0, 6)]
    second = [(0.0, 4), (1.0, 8), (2.0, 16)]
    assert together([first, second]) == [(0.0, 8), (1.0, 16), (2.0, 24), (3.0, 22)]
    assert together([first]) == first
    assert together([[(0.0, 4), (0.5, 16), (0.5, 8), (0.5, 12)]]) == [(0.0, 4), (0.5, 12)], "in the order they came"
    assert together([]) == []


def spool_of(tmp_path: Path, sizes: list[int]) -> Path:
    spool = tmp_path / "missing.spool"
    lines = [f"{hashlib.sha256(str(n).encode()).hexdigest()},{size},dir/f{n},with,commas\n" for n, size in
             enumerate(sizes)]
    spool.write_text("".join(lines), encoding="utf-8")
    return spool


def test_shards_are_contiguous_digest_ranges_of_about_equal_weight(tmp_path: Path) -> None:
    generator = random.Random(26)
    sizes = [generator.choice([1_000, 4_000, 4_000_000]) for _ in range(3_000)]
    spool = spool_of(tmp_path, sizes)
    shards = split(spool, 3, tmp_path)
    assert [shard.index for shard in shards] == [0, 1, 2]
    lines = [shard.spool.read_text(encoding="utf-8").splitlines() for shard in shards]
    assert sorted(sum(lines, [])) == sorted(spool.read_text(encoding="utf-8").splitlines()), "each line once"
    ranges = [(min(line[:64] for line in part), max(line[:64] for line in part)) for part in lines]
    assert all(ranges[i][1] < ranges[i + 1][0] for i in range(2)), ranges
    assert [shard.files for shard in shards] == [len(part) for part in lines]
    weights = [shard.bytes + shard.files * defaults.SHARD_FILE_WEIGHT for shard in shards]
    heaviest_file = max(sizes) + defaults.SHARD_FILE_WEIGHT
    assert max(weights) - min(weights) <= 2 * heaviest_file, weights


def test_fewer_shards_than_asked_when_there_is_less_to_split(tmp_path: Path) -> None:
    shards = split(spool_of(tmp_path, [10, 20]), 3, tmp_path)
    assert [(shard.index, shard.files) for shard in shards] == [(0, 1), (1, 1)]


@pytest.fixture(scope="module")
def remote_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One repository of FILES files, small and a few of 1 MB."""
    root = tmp_path_factory.mktemp("remote")
    files = {f"d{n % 7}/f{n}.bin": (b"%d" % n) * (1 + (n % 5) * 50) for n in range(FILES)}
    files.update({f"big/b{n}.bin": bytes([n]) * 1_000_000 for n in range(3)})
    write_repository(root / "repo", files)
    return root


@pytest.fixture(scope="module")
def remote_server(remote_root: Path) -> Iterator[RunningServer]:
    """The fixture server over the repository, as near as the loopback is."""
    with serve_in_background(remote_root) as server:
        yield server


@pytest.fixture(scope="module")
def remote(remote_server: RunningServer) -> str:
    return f"{remote_server.url}/repo/PULP_MANIFEST"


@pytest.fixture(params=ENGINES)
def pulp_pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[PulpSync, PulpSync]]:
    """Two installations on new databases of one engine: one syncs split, the other not."""
    for folder in ("one", "other"):
        (tmp_path / folder).mkdir()
    with throwaway_database(request.param, tmp_path / "one") as one, \
            throwaway_database(request.param, tmp_path / "other") as other:
        pair = []
        for url, home in ((one, tmp_path / "split"), (other, tmp_path / "whole")):
            cli = PulpSync({**os.environ, "DATABASE_URL": url, "PULP_SYNC_HOME": str(home)}, home)
            migrated = cli.run("migrate")
            assert migrated.returncode == 0, migrated.stderr
            pair.append(cli)
        yield pair[0], pair[1]


def store_digests(pulp: PulpSync) -> list[str]:
    return sorted("".join(path.relative_to(pulp.home / "artifacts" / "artifact").parts)
                  for path in (pulp.home / "artifacts" / "artifact").rglob("*") if path.is_file())


@pytest.mark.slow
def test_a_sync_split_in_three_gives_the_version_and_store_of_an_unsplit_one(
        pulp_pair: tuple[PulpSync, PulpSync], remote: str) -> None:
    split_sync, whole = pulp_pair
    report = split_sync.sync(remote, "--processes", "3")
    assert (report["processes"], report["artifacts_downloaded"], report["version"]) == (3, FILES + 3, 1), report
    assert whole.sync(remote)["processes"] == 1
    split_state, whole_state = split_sync.state(), whole.state()
    assert split_state["repositories"] == whole_state["repositories"]
    assert split_state["rows"] == whole_state["rows"]
    assert store_digests(split_sync) == store_digests(whole) and len(store_digests(whole)) == FILES + 3
    verified = split_sync.run("verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    again = split_sync.sync(remote, "--processes", "3")
    assert (again["artifacts_downloaded"], again["version"], again["processes"]) == (0, None, 1), again


def children_of(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def start_slow_split_sync(pulp: PulpSync, url: str, *args: str) -> tuple[subprocess.Popen[str], list[int]]:
    """`pulp-sync sync` split in three at 120 requests a second, 40 in each process (about 2.5 s a shard);
    it and its three shard processes once they run."""
    command = [str(PULP_SYNC), "sync", url, "--processes", "3", "--rate-limit", "120", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=pulp.env)
    deadline = time.monotonic() + 60
    while len(children := children_of(process.pid)) < 3:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    return process, children


@pytest.fixture
def pulp(tmp_path: Path) -> PulpSync:
    home = tmp_path / "home"
    return PulpSync({**os.environ, "PULP_SYNC_HOME": str(home)}, home)


@pytest.mark.slow
def test_a_shard_killed_mid_sync_fails_the_sync_cleanly_and_a_resync_completes(pulp: PulpSync, remote: str) -> None:
    process, children = start_slow_split_sync(pulp, remote, "--json")
    time.sleep(1.5)  # past the first flush of each shard's rows (defaults.FLUSH_SECONDS)
    os.kill(children[1], signal.SIGKILL)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1, err
    assert json.loads(out)["processes"] == 3, out
    assert f"(process {children[1]}) failed: its process was killed by SIGKILL before it finished; 'repo' is " \
           "unchanged" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert all(map(gone, children)), "every shard ended with the sync"
    verified = pulp.run("verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "repo" not in pulp.state()["repositories"], "no version, nor an empty repository, from a failed first sync"
    report = pulp.sync(remote, "--processes", "3")
    assert report["version"] == 1 and report["artifacts_skipped"] > 0, "the other shards kept their files"
    assert len(store_digests(pulp)) == FILES + 3
    verified = pulp.run("verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.slow
def test_stopping_a_split_sync_ends_every_shard(pulp: PulpSync, remote: str) -> None:
    process, children = start_slow_split_sync(pulp, remote)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM" in err
    assert all(map(gone, children)), "a shard outlived its sync"
    verified = pulp.run("verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def gone(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return not status.exists() or "zombie" in status.read_text()


@pytest.mark.slow
def test_no_shard_outlives_a_sync_killed_with_sigkill(pulp: PulpSync, remote: str) -> None:
    process, children = start_slow_split_sync(pulp, remote)
    process.kill()
    process.communicate(timeout=60)
    deadline = time.monotonic() + 30
    while not all(map(gone, children)):
        assert time.monotonic() < deadline, [child for child in children if not gone(child)]
        time.sleep(0.05)


def test_processes_given_wrong_are_a_usage_error(pulp: PulpSync) -> None:
    done = pulp.run("sync", "http://127.0.0.1:9/PULP_MANIFEST", "--processes", "0")
    assert done.returncode == 2
    assert "Invalid value for '--processes': it must be from 1 to" in done.stderr and "Traceback" not in done.stderr


# One budget for the remote: a split sync, seen from the remote, holds the concurrency and rate of one.

BUDGET_CONCURRENCY = 4
"""Connections in flight at most, the split sync's processes together."""
BUDGET_RATE = 60.0
"""Requests a second at most, the split sync's processes together: FILES + 3 files take about 5 s."""
WINDOW = 3
"""Whole seconds the rate is counted over: one second's count swings with when a busy machine lets each
request through; over three, a late request moves little."""
LATE = 0.5
"""Seconds a busy machine may hold requests back and then let them arrive together (their rate's worth)."""


def counted_sync(pulp: PulpSync, server: RunningServer, *args: str) -> tuple[dict[str, Any], StatsJson]:
    """A sync of the test repository from `server`, its report and what the server counted of it."""
    server.reset_stats()
    report = pulp.sync(f"{server.url}/repo/PULP_MANIFEST", *args)
    return report, server.stats()


def busiest(per_second: list[int], seconds: int) -> int:
    """The most requests that arrived in `seconds` whole seconds in a row."""
    return max(sum(per_second[start:start + seconds]) for start in range(max(1, len(per_second) - seconds + 1)))


@pytest.fixture(scope="module")
def far_remote_server(remote_root: Path) -> Iterator[RunningServer]:
    """The fixture server over the repository with the wan profile: 40 ms to the first byte keeps each
    connection busy long enough for the server to see them all at once."""
    with serve_in_background(remote_root, profile=PROFILES["wan"]) as server:
        yield server


@pytest.mark.slow
@pytest.mark.parametrize("processes", [2, 4])
def test_a_split_sync_holds_the_remotes_concurrency(pulp: PulpSync, far_remote_server: RunningServer,
                                                     processes: int) -> None:
    report, seen = counted_sync(pulp, far_remote_server, "--processes", str(processes),
                                "--concurrency", str(BUDGET_CONCURRENCY))
    assert seen["max_in_flight"] <= BUDGET_CONCURRENCY, seen
    assert sum(seen["per_second"]) == FILES + 3 + 1, "every file and the manifest, once"
    assert (report["processes"], report["connections"]) == (processes, BUDGET_CONCURRENCY), report


@pytest.mark.slow
@pytest.mark.parametrize("processes", [2, 4])
def test_a_split_sync_holds_the_remotes_rate(pulp: PulpSync, remote_server: RunningServer, processes: int) -> None:
    """Each process's limiter may start one request at each edge of a window, and the sync's own one (the
    manifest): `processes + 1` over the rate's count, besides what a busy machine holds back (LATE)."""
    report, seen = counted_sync(pulp, remote_server, "--processes", str(processes), "--rate-limit", str(BUDGET_RATE))
    allowed = BUDGET_RATE * (WINDOW + LATE) + processes + 1
    assert busiest(seen["per_second"], WINDOW) <= allowed, (seen["per_second"], allowed)
    assert report["processes"] == processes, report


@pytest.mark.slow
def test_more_processes_than_connections_are_as_many_as_the_connections(pulp: PulpSync, remote: str) -> None:
    report = pulp.sync(remote, "--processes", "4", "--concurrency", "2")
    assert (report["processes"], report["connections"], report["artifacts_downloaded"]) == (2, 2, FILES + 3), report
