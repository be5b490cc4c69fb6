"""Workers on two hosts (scripts/hosts.sh: network namespaces on a bridge, 198.18.0.0/15) syncing through
Redis and PostgreSQL over the bridge, then one host lost with its workers mid-sync; and the machine's
servers, which other clients use, left as they were by all of it.

Everything a worker reaches, it reaches at 198.18.0.1 as a second machine would: Redis, PostgreSQL and
the fixture server, the first two through forwarders that hosts.sh starts and stops (or directly, where
an earlier hosts.sh made those servers listen on the bridge themselves). Each host has its own host
name, so no process can see another host's processes: the tasks of the lost host are failed by the
other host's workers, through the heartbeats they keep in Redis (pulp_sync/tasking/worker.py), within two of
their TTLs.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from redis import Redis

from fixtures import NetworkProfile
from fixtures.server import serve_in_background
from tests.databases import throwaway_database
from tests.pulp_sync.conftest import write_repository

pytestmark = [pytest.mark.slow, pytest.mark.machine_wide("hosts")]  # tests/conftest.py

ROOT = Path(__file__).resolve().parent.parent
HOSTS = ROOT / "scripts" / "hosts.sh"
PULP_SYNC = Path(sys.executable).parent / "pulp-sync"
SERVICES = "198.18.0.1"
TTL = 2.0
"""PULP_SYNC_WORKER_TTL of this test's workers: a lost host's tasks must fail within two of them (and a reap)."""
SLOW = NetworkProfile(per_connection_bps=400_000, name="slow-for-hosts")
"""400 kB/s a connection, two connections a sync."""

_TASKS = """
SELECT repository.name, task.state, task.worker, task.error
FROM pulp_sync_task AS task LEFT JOIN pulp_sync_repository AS repository ON repository.id = task.repository_id
ORDER BY task.created
"""
"""The tasks as the database holds them, read without reaping anything (`pulp-sync tasks` would reap), and
in this process: a `pulp-sync` child per look takes seconds on a busy machine, long enough to miss a
sync running from its start to its end."""
SERVER_CONTROLS = ("redis-cli", "psql", "systemctl", "service", "pg_ctlcluster", "pg_ctl")
"""Commands that reconfigure or restart a server: hosts.sh runs none of them (other clients use the servers)."""
_REACH = """
import sys, psycopg, redis
with psycopg.connect(host=sys.argv[1], user="postgres", dbname="postgres", connect_timeout=10) as connection:
    print(connection.execute("SELECT host(inet_client_addr())").fetchone()[0])
print(redis.Redis(host=sys.argv[1], socket_timeout=10).ping())
"""
"""Run on a host: where PostgreSQL sees it connect from, and whether Redis answers it."""


def test_the_hosts_reach_the_servers_and_leave_them_as_they_were(tmp_path: Path) -> None:
    """`prepare`, `up` and `down` with every server control command refused: PostgreSQL not restarted,
    another client's open transaction alive, Redis's configuration unchanged, and the forwarders gone."""
    env = _refusing_server_controls(tmp_path)
    redis = Redis.from_url("redis://127.0.0.1:6379/0")
    configured = (redis.config_get("bind"), redis.config_get("protected-mode"))
    started = _server_says("SELECT pg_postmaster_start_time()")
    with psycopg.connect(host="127.0.0.1", user="postgres", dbname="postgres") as witness:
        xid = witness.execute("SELECT txid_current()").fetchone()  # a transaction, left open throughout
        try:
            _without_controls(tmp_path, _hosts("prepare", env=env))
            _without_controls(tmp_path, _hosts("up", "2", env=env))
            forwarders = _forwarders(env)
            for host in (1, 2):
                client, pong = _run_on(host, [sys.executable, "-c", _REACH, SERVICES], env).split()
                assert pong == "True"
                # through a forwarder PostgreSQL sees a local client; else it serves the bridge itself
                assert client == ("127.0.0.1" if forwarders[5432] else f"198.18.0.{10 + host}"), forwarders
        finally:
            down = _hosts("down", env=env)
        _without_controls(tmp_path, down)
        assert not any(_is_alive(pid, port) for port, pid in forwarders.items() if pid), forwarders
        assert not any(_forwarders(env).values())

        assert witness.execute("SELECT txid_current()").fetchone() == xid  # the same transaction, still open
        assert _server_says("SELECT state FROM pg_stat_activity WHERE pid = %s",
                            witness.info.backend_pid) == ("idle in transaction",)
    assert _server_says("SELECT pg_postmaster_start_time()") == started
    assert (redis.config_get("bind"), redis.config_get("protected-mode")) == configured


def test_a_forwarder_that_dies_is_noticed_and_replaced_and_down_stops_it() -> None:
    """A forwarder of a port of its own, an echo server's on 127.0.0.1: tested even on a machine whose
    servers serve their ports of the bridge themselves (an earlier hosts.sh made them listen there)."""
    with _echo_server() as (port, peers):
        env = {**os.environ, "PULP_SYNC_HOSTS_FORWARD": str(port)}
        try:
            up = _hosts("up", "1", env=env)
            assert up.returncode == 0, up.stderr
            first = _forwarders(env)[port]
            assert first and _echo_from_host(port, env) == "hello"
            assert set(peers) == {"127.0.0.1"}  # the forwarder connects from loopback: the server trusts it as local
            assert _echo_from_loopback(port) == b""  # so it serves the bridge's network only

            os.kill(first, 9)
            assert re.search(rf"{SERVICES}:{port} forwarder dead", _hosts("status", env=env).stdout)
            again = _hosts("up", "1", env=env)
            assert again.returncode == 0 and f"the forwarder of port {port} had died" in again.stderr
            second = _forwarders(env)[port]
            assert second and second != first and _echo_from_host(port, env) == "hello"
        finally:
            down = _hosts("down", env=env)
        assert down.returncode == 0, down.stderr
        assert not _is_alive(second, port) and _forwarders(env) == {port: None}
        assert re.search(rf"{SERVICES}:{port} not served", _hosts("status", env=env).stdout)


def _refusing_server_controls(tmp_path: Path) -> dict[str, str]:
    """The environment, with every command of SERVER_CONTROLS one that logs its call and fails."""
    controls = tmp_path / "controls"
    controls.mkdir()
    for name in SERVER_CONTROLS:
        (controls / name).write_text(f'#!/bin/sh\necho "{name} $*" >>{tmp_path / "controls.log"}\nexit 1\n')
        (controls / name).chmod(0o755)
    return {**os.environ, "PATH": f"{controls}:{os.environ['PATH']}"}


def _without_controls(tmp_path: Path, done: subprocess.CompletedProcess[str]) -> None:
    """hosts.sh, `done`, succeeded without calling any of SERVER_CONTROLS (which would have failed)."""
    log = tmp_path / "controls.log"
    assert not log.exists(), f"{' '.join(done.args[1:])} ran {log.read_text()}"
    assert done.returncode == 0, done.stderr


def _hosts(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(HOSTS), *arguments], env=env, capture_output=True, text=True, timeout=120)


def _run_on(host: int, command: list[str], env: dict[str, str]) -> str:
    done = _hosts("exec", str(host), *command, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _forwarders(env: dict[str, str]) -> dict[int, int | None]:
    """Each forwarded port of the bridge, with the pid of its forwarder, or None where there is none."""
    status = _hosts("status", env=env)
    assert status.returncode == 0, status.stderr
    served = re.findall(rf"^{re.escape(SERVICES)}:(\d+) (.*)$", status.stdout, re.MULTILINE)
    assert served, status.stdout
    return {int(port): int(pid.group(1)) if (pid := re.match(r"forwarder \(pid (\d+)\)", what)) else None
            for port, what in served}


def _is_alive(pid: int, port: int) -> bool:
    """Whether `pid` is still the forwarder of `port` (a zombie, or a reused pid, is not)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(f"socat\0TCP-LISTEN:{port},".encode())
    except FileNotFoundError:
        return False


def _server_says(query: str, *parameters: Any) -> Any:
    """The first row of `query` on the machine's PostgreSQL, asked on a connection of its own."""
    with psycopg.connect(host="127.0.0.1", user="postgres", dbname="postgres") as connection:
        return connection.execute(query, parameters).fetchone()


@contextmanager
def _echo_server() -> Iterator[tuple[int, list[str]]]:
    """A TCP echo server on 127.0.0.1, a free port, and the addresses of the peers it served so far."""
    peers: list[str] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                connection, (peer, _) = listener.accept()
            except OSError:  # closed: the test is over
                return
            peers.append(peer)
            with connection:
                connection.sendall(connection.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], peers
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (closing alone would not)
        listener.close()
        thread.join(timeout=10)


def _echo_from_loopback(port: int) -> bytes:
    """What the bridge's `port` answers a client of this machine that connects from 127.0.0.1."""
    with socket.socket() as client:
        client.settimeout(10)
        client.bind(("127.0.0.1", 0))
        client.connect((SERVICES, port))
        try:
            client.sendall(b"hello")
            return client.recv(100)
        except ConnectionError:  # refused before or while it was sent
            return b""


def _echo_from_host(port: int, env: dict[str, str]) -> str:
    echo = (f"import socket; c = socket.create_connection(({SERVICES!r}, {port}), timeout=10); "
            "c.sendall(b'hello'); print(c.recv(100).decode())")
    return _run_on(1, [sys.executable, "-c", echo], env).strip()


@pytest.fixture(scope="module")
def hosts() -> Iterator[None]:
    up = _hosts("up", "2")
    assert up.returncode == 0, up.stderr
    try:
        yield
    finally:
        _hosts("down")


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

        _dispatch_together(service, remote, range(4, 8))  # each runs some five seconds: not over before seen
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


def test_a_split_sync_spreads_its_shards_over_the_hosts(remote: str, service: dict[str, str]) -> None:
    """One sync of four files of 1 MB split in four: its shards are taken by workers of both hosts (the
    board in Redis names each shard's process, host:pid, while it runs), into one version."""
    workers = [_worker(host, service) for host in (1, 1, 2, 2)]
    redis = Redis.from_url("redis://127.0.0.1:6379/0")
    try:
        _wait_for_workers(service["PULP_SYNC_QUEUE"], 4)
        # the remote's connections are the whole sync's, one at least per shard: four shards need four
        _dispatch(service, remote, 7, "--processes", "4", "--concurrency", "4")
        takers: set[str] = set()

        def done(tasks: list[dict[str, Any]]) -> bool:
            for key in redis.scan_iter(match="pulp-sync:split:*:shard:*"):
                process = redis.hget(key, "process")
                if process:
                    takers.add(process.decode().rpartition(":")[0])
            return bool(tasks) and all(t["state"] in ("completed", "failed") for t in tasks)

        tasks = _until(service, done, 60)
        assert [t["state"] for t in tasks] == ["completed"], tasks
        assert takers == {"pulp-sync-host-1", "pulp-sync-host-2"}, takers
        verified = subprocess.run([str(PULP_SYNC), "verify"], env=service, capture_output=True, text=True,
                                  timeout=120)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        for process in workers:
            process.terminate()
        for process in workers:
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


def _queue_sync(remote: str, number: int, *options: str) -> list[str]:
    """The command that queues repo-NUMBER's sync for a worker and returns."""
    return [str(PULP_SYNC), "sync", f"{remote}repo-{number}/PULP_MANIFEST", "--tasking", "rq", "--no-wait",
            "--concurrency", "2", "--json", *options]


def _dispatch(env: dict[str, str], remote: str, number: int, *options: str) -> None:
    done = subprocess.run(_queue_sync(remote, number, *options), env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def _dispatch_together(env: dict[str, str], remote: str, numbers: range) -> None:
    """Queue the syncs of these repositories at once: one `pulp-sync sync` after another takes seconds each on
    a busy machine, and the first could end before the last is queued."""
    started = [subprocess.Popen(_queue_sync(remote, number), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True) for number in numbers]
    for process in started:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr


def _running_on(task: dict[str, Any], host: int) -> bool:
    return task["state"] == "running" and task["worker"].startswith(f"pulp-sync-host-{host}.")


def _until(env: dict[str, str], done: Any, seconds: float) -> list[dict[str, Any]]:
    """The tasks once `done(tasks)` holds; fails with them after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        with psycopg.connect(env["DATABASE_URL"].replace(SERVICES, "127.0.0.1"), connect_timeout=10) as connection:
            tasks = [{"repository": repository, "state": state, "worker": worker, "error": error}
                     for repository, state, worker, error in connection.execute(_TASKS)]
        if done(tasks):
            return tasks
        assert time.monotonic() < deadline, f"not done after {seconds:g} s: {tasks}"
        time.sleep(0.1)


def _forget(queue: str) -> None:
    """The test's queue and its jobs out of Redis (the workers' records expire by themselves)."""
    from rq import Queue

    Queue(queue, connection=Redis.from_url("redis://127.0.0.1:6379/0")).delete(delete_jobs=True)
