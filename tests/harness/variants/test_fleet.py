"""Fleet runs (`repositories = K`) and workers on several hosts (`hosts = N`): the spec's checks, the
figures of a fleet, and one real experiment through the command line on a throwaway PostgreSQL database,
with workers on this machine and on two hosts of scripts/hosts.sh (network namespaces: needs root).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harness.experiment.spec import SpecError, experiment_from_dict
from harness.results.records import record_from_dict
from harness.run.child import ChildRun
from harness.run.recording import record_fleet_run
from harness.run.schedule import PlannedRun
from harness.variants.fleet import Fleet, FleetTask, download_share, repository_names
from harness.variants.hosts import on_bridge
from harness.variants.workers import WorkerUsage
from tests.databases import throwaway_database
from tests.harness.helpers import run_bench, write_spec

pytestmark = pytest.mark.machine_wide("hosts")  # scripts/hosts.sh's namespaces: tests/conftest.py

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REPORT = {"bytes_downloaded": 1_000_000, "artifacts_downloaded": 10, "artifacts_skipped": 5, "content_units": 15,
          "retries": 0, "failures": 0, "latency_p50": 0.01, "latency_p90": 0.02, "latency_p99": 0.03,
          "downloader": "asyncio", "concurrency": 10, "processes": 2, "connections": 10}


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ({"hosts": 2}, r'not hosts \(tasking = "rq" takes it\)'),
        ({"repositories": 8}, r'not repositories \(tasking = "rq" takes it\)'),
        ({"tasking": "rq", "repositories": 0}, "repositories = 0: how many a run syncs at once, 1 or more"),
        ({"tasking": "rq", "hosts": -1, "db": "postgresql"}, "hosts = -1: 0 .workers on this machine. or 1 to 99"),
        ({"tasking": "rq", "hosts": 2}, "hosts = 2 needs a database every host reaches: db = \"postgresql\""),
        ({"tasking": "rq", "hosts": 2, "db": "sqlite"}, "sqlite is a file of this machine's"),
        ({"tasking": "rq", "hosts": 2, "db": "mysql"}, "MariaDB listens on 127.0.0.1 only"),
        ({"tasking": "rq", "hosts": 2, "db": "postgres://pg@db.example/x"}, "not db.example"),
    ],
)
def test_hosts_and_repositories_are_checked_when_read(variant: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message) as raised:
        experiment_from_dict({"name": "x", "variants": [{"name": "v", "downloader": "asyncio", **variant}]})
    assert "\n" not in str(raised.value)


def test_hosts_cannot_reach_a_remote_of_ones_own() -> None:
    variant = {"name": "v", "downloader": "asyncio", "tasking": "rq", "hosts": 1, "db": "postgresql"}
    with pytest.raises(SpecError, match="base_url with hosts"):
        experiment_from_dict({"name": "x", "base_url": "https://repo.example/", "variants": [variant]})


def test_the_hosts_reach_the_database_and_redis_on_the_bridge() -> None:
    env = on_bridge({"DATABASE_URL": "postgres://postgres:secret@127.0.0.1:5432/db", "HOME": "/root"},
                    "redis://localhost:6379/0")
    assert env == {"DATABASE_URL": "postgres://postgres:secret@198.18.0.1:5432/db", "HOME": "/root",
                   "REDIS_URL": "redis://198.18.0.1:6379/0"}


def test_a_fleet_is_timed_from_its_first_dispatch_to_its_last_end() -> None:
    fleet = Fleet((_child(1.0), _child(3.0, returncode=1)), (
        _task("bench-1", created=0.0, started=0.5, finished=2.0, worker="pulp-sync-host-1.10.ab12"),
        _task("bench-2", created=0.2, started=2.2, finished=4.0, worker="pulp-sync-host-2.11.cd34"),
    ), None)
    assert fleet.makespan == 4.0
    assert fleet.queue_waits == (0.5, 2.0) and fleet.median_queue_seconds == 1.25
    assert fleet.hosts_used == 2
    assert fleet.report["bytes_downloaded"] == 2_000_000 and fleet.report["mb_per_s"] == 0.5
    assert (fleet.report["processes"], fleet.report["connections"]) == (2, 10), "each sync's own, not summed"
    clients = fleet.clients
    assert (clients.returncode, clients.wall_seconds, clients.user_seconds) == (1, 3.0, 2.0)


def test_a_fleet_run_is_one_record_with_every_tasks_wait() -> None:
    tasks = tuple(_task(name, created=0.1 * k, started=0.1 * k + k, finished=5.0, worker=f"host.{k}.ab12")
                  for k, name in enumerate(repository_names(3)))
    fleet = Fleet(tuple(_child(5.5, stdout=json.dumps(REPORT)) for _ in tasks), tasks, None)
    usage = WorkerUsage(user_seconds=3.0, system_seconds=1.0, peak_rss_mb=90.0, voluntary_switches=1,
                        involuntary_switches=1)
    record = record_fleet_run(PlannedRun("100", 1, 1, "fleet", False), "now", fleet, 0.5, None, 60.0, usage, 0)
    assert record.ok and record.sync_seconds == 5.0 and record.queue_waits == (0.0, 1.0, 2.0)
    assert (record.queue_seconds, record.queue_max_seconds, record.repositories, record.hosts_used) == (1.0, 2.0, 3, 1)
    assert (record.artifacts_downloaded, record.files_per_s, record.hosts) == (30, 6.0, 0)
    assert record_from_dict(json.loads(json.dumps(record.as_dict()))) == record


def test_a_fleet_downloads_at_most_its_repositories_samples() -> None:
    assert repository_names(1) == ["bench"] and repository_names(2) == ["bench-1", "bench-2"]
    assert (download_share(1), download_share(8)) == (1.0, 6.0)


FLEET = """
runs = 1
warmup = 0
profile = "loopback"

[[variants]]
name = "here"
downloader = "asyncio"
db = "{db}"
tasking = "rq"
workers = 2
repositories = 3

[[variants]]
name = "two-hosts"
downloader = "asyncio"
db = "{db}"
tasking = "rq"
workers = 2
hosts = 2
repositories = 3
"""


@pytest.mark.slow
def test_three_repositories_sync_at_once_on_workers_here_and_on_two_hosts(tiny_tree: Path, tmp_path: Path) -> None:
    with throwaway_database("postgresql", tmp_path) as db:
        spec = write_spec(tmp_path, tiny_tree, FLEET.format(db=db))
        done = run_bench("run", str(spec), "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"),
                         cwd=tmp_path)
    assert "= 2 runs of 6 syncs" in done.stderr
    runs = {run["variant"]: run for run in json.loads((tmp_path / "out" / "results.json").read_text())["runs"]}
    for name, hosts in (("here", 0), ("two-hosts", 2)):
        run = runs[name]
        assert run["error"] is None
        assert (run["hosts"], run["repositories"], run["hosts_used"]) == (hosts, 3, max(hosts, 1))
        assert len(run["queue_waits"]) == 3 and run["queue_max_seconds"] == max(run["queue_waits"])
        assert 0 <= run["queue_seconds"] <= run["queue_max_seconds"] < run["sync_seconds"]
        assert run["artifacts_downloaded"] + run["artifacts_skipped"] == run["content_units"] == 3 * 75
        assert run["files_per_s"] == pytest.approx(run["artifacts_downloaded"] / run["sync_seconds"])
        assert run["worker_user_seconds"] > 0


def _task(repository: str, created: float, started: float, finished: float, worker: str) -> FleetTask:
    def at(seconds: float) -> datetime:
        return T0 + timedelta(seconds=seconds)

    return FleetTask(repository, "completed", at(created), at(started), at(finished), worker, None, REPORT)


def _child(wall: float, returncode: int = 0, stdout: str = "") -> ChildRun:
    return ChildRun(("pulp-sync",), returncode, stdout, "", wall, 1.0, 0.2, 70.0, 10, 2)
