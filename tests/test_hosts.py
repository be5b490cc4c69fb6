"""Workers on two hosts (scripts/hosts.sh: network namespaces on a bridge, 198.18.0.0/15) syncing through
Redis and PostgreSQL over the bridge, then one host lost with its workers mid-sync.

Everything a worker reaches, it reaches at 198.18.0.1 as a second machine would: Redis, PostgreSQL and
the fixture server. Each host has its own host name, so no process can see another host's processes:
the tasks of the lost host are failed by the other host's workers, through the heartbeats they keep in
Redis (pulp_sync/worker.py), within two of their TTLs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from redis import Redis

from fixtures import NetworkProfile
from fixtures.server import serve_in_background
from tests.databases import throwaway_database
from tests.pulp_sync.conftest import write_repository

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
HOSTS = ROOT / "scripts" / "hosts.sh"
PULP_SYNC = Path(sys.executable).parent / "pulp-sync"
SERVICES = "198.18.0.1"
TTL = 2.0
"""PULP_SYNC_WORKER_TTL of this test's workers: a lost host's tasks must fail within two of them (and a reap)."""
SLOW = NetworkProfile(per_connection_bps=400_000, name="slow-for-hosts")
"""400 kB/s a connection, two connections a sync."""

_TASKS = """
import json
from pulp_sync import database
database.setup()
from pulp_sync.models import Task
print(json.dumps([{"repository": t.repository.name, "state": t.state, "worker": t.worker, "error": t.error}
                  for t in Task.objects.select_related("repository").order_by("created")]))
"""
"""The tasks as the database holds them, read without reaping anything (`pulp-sync tasks` would reap)."""


@pytest.fixture(scope="module")
def hosts() -> Iterator[None]:
    up = subprocess.run(["bash", str(HOSTS), "up", "2"], capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr
    try:
        yield
    finally:
        subprocess.run(["bash", str(HOSTS), "down"], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def remote(hosts: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """repo-0 ... repo-3, four files of 200 kB each, and repo-4 ... repo-7, four of 1 MB (about five
    seconds a sync: long enough to lose a host in the middle), served slowly on the bridge's address."""
    root = tmp_path_factory.mktemp("remote")
    for number in range(8):
        size = 200_000 if number < 4 else 1_000_000
        write_repository(root / f"repo-{number}", {f"f{n}.bin": os.urandom(size) for n in range(4)})
    with serve_in_background(root, SLOW, host=SERVICES) as server:
        yield server.url


@pytest.fixture
def service(hosts: None, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of every process of one installation: its database and Redis on the bridge, its
    own queue, a store at the same path on every host."""
    queue = f"pulp-sync-hosts-{uuid.uuid4().hex[:12]}"
    with throwaway_database("postgresql", tmp_path) as url:
        env = {**os.environ, "DATABASE_URL": url.replace("127.0.0.1", SERVICES), "PULP_SYNC_QUEUE": queue,
               "REDIS_URL": f"redis://{SERVICES}:6379/0", "PULP_SYNC_HOME": str(tmp_path / "home"),
               "PULP_SYNC_WORKER_TTL": str(TTL)}
        migrated = subprocess.run([str(PULP_SYNC), "migrate"], env=env, capture_output=True, text=True, timeout=120)
        assert migrated.returncode == 0, migrated.stderr
        try:
            yield env
        finally:
            _forget(queue)


def test_workers_on_two_hosts_sync_and_outlive_a_lost_host(remote: str, service: dict[str, str]) -> None:
    workers = {host: [_worker(host, service) for _ in range(2)] for host in (1, 2)}
    try:
        _wait_for_workers(service["PULP_SYNC_QUEUE"], 4)

        first = [_dispatch(service, remote, n) for n in range(4)]
        tasks = _until(service, lambda tasks: all(t["state"] == "completed" for t in tasks), 60)
        assert len(tasks) == len(first) == 4
        assert {t["worker"].split(".")[0] for t in tasks} == {"pulp-sync-host-1", "pulp-sync-host-2"}, tasks

        for n in range(4, 8):
            _dispatch(service, remote, n)
        on_host_1 = _until(service, lambda tasks: sum(_running_on(t, 1) for t in tasks) >= 1, 30)
        lost = {t["repository"] for t in on_host_1 if _running_on(t, 1)}
        subprocess.run(["bash", str(HOSTS), "kill", "1"], check=True, timeout=30)
        killed = time.monotonic()
        tasks = _until(service, lambda tasks: all(t["state"] in ("completed", "failed") for t in tasks), 60)
        ended = time.monotonic() - killed
        failed = {t["repository"] for t in tasks if t["state"] == "failed"}
        assert lost <= failed, tasks
        assert all("stopped sending heartbeats" in t["error"] or "is gone" in t["error"]
                   for t in tasks if t["state"] == "failed"), tasks
        assert ended < 2 * TTL + 10, f"the lost host's tasks took {ended:.1f} s to fail"
        print(f"lost host: tasks {sorted(lost)} failed {ended:.1f} s after the kill")

        for repository in sorted(failed):
            _dispatch(service, remote, int(repository.removeprefix("repo-")))
        tasks = _until(service, lambda tasks: all(t["state"] in ("completed", "failed") for t in tasks), 60)
        latest = {t["repository"]: t["state"] for t in tasks}
        assert set(latest.values()) == {"completed"} and len(latest) == 8, tasks
        verified = subprocess.run([str(PULP_SYNC), "verify"], env=service, capture_output=True, text=True,
                                  timeout=120)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        for process in (p for started in workers.values() for p in started):
            process.terminate()
        for process in (p for started in workers.values() for p in started):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def _worker(host: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["bash", str(HOSTS), "exec", str(host), str(PULP_SYNC), "worker"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_for_workers(queue: str, count: int) -> None:
    from rq import Queue, Worker

    redis_queue = Queue(queue, connection=Redis.from_url("redis://127.0.0.1:6379/0"))
    deadline = time.monotonic() + 60
    while Worker.count(queue=redis_queue) < count:
        assert time.monotonic() < deadline, f"{count} workers did not register on {queue}"
        time.sleep(0.2)


def _dispatch(env: dict[str, str], remote: str, number: int) -> None:
    done = subprocess.run([str(PULP_SYNC), "sync", f"{remote}repo-{number}/PULP_MANIFEST", "--tasking", "rq",
                           "--no-wait", "--concurrency", "2", "--json"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def _running_on(task: dict[str, Any], host: int) -> bool:
    return task["state"] == "running" and task["worker"].startswith(f"pulp-sync-host-{host}.")


def _until(env: dict[str, str], done: Any, seconds: float) -> list[dict[str, Any]]:
    """The tasks once `done(tasks)` holds; fails with them after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        read = subprocess.run([sys.executable, "-c", _TASKS], env=env, capture_output=True, text=True, timeout=60)
        assert read.returncode == 0, read.stderr
        tasks = json.loads(read.stdout)
        if done(tasks):
            return tasks
        assert time.monotonic() < deadline, f"not done after {seconds:g} s: {tasks}"
        time.sleep(0.3)


def _forget(queue: str) -> None:
    """The test's queue and its jobs out of Redis (the workers' records expire by themselves)."""
    from rq import Queue

    Queue(queue, connection=Redis.from_url("redis://127.0.0.1:6379/0")).delete(delete_jobs=True)
