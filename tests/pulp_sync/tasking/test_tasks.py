"""Syncs as tasks: inline, and on real RQ workers (subprocesses) with the real Redis of 127.0.0.1.

In-process tests share conftest's sqlite database with the workers they start (same PULP_SYNC_HOME);
the PostgreSQL and MariaDB tests run every command in a subprocess on a throwaway database. Each
test has an RQ queue of its own, removed from Redis afterwards, so tests never take each other's jobs.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from redis import Redis
from rq.exceptions import AbandonedJobError
from rq.job import Job

from fixtures import NetworkProfile
from fixtures.server import serve_in_background
from pulp_sync import locks
from pulp_sync.content.store import artifact_store
from pulp_sync.models import Remote, Repository, RepositoryVersion, Task, TaskState
from pulp_sync.tasking.callbacks import on_job_failure
from pulp_sync.tasking.queues import redis_connection
from pulp_sync.tasking.reaping import reap_abandoned_tasks
from pulp_sync.tasking.tasks import cancel_task, dispatch_sync, wait_for
from tests.databases import throwaway_database
from tests.pulp_sync.conftest import write_repository
from tests.pulp_sync.sync.test_pipeline import assert_store_is_sound
from tests.pulp_sync.test_cli import PULP_SYNC, invoke

SLOW = NetworkProfile(per_connection_bps=250_000, name="slow-for-tests")
"""About a second per 256 kB file, so a worker is surely mid-sync when it is killed."""
FINISH_SECONDS = 60
"""How long a test waits for a task before it gives up (a limit against hanging, not a measurement)."""


def forget_queue(connection: Redis, queue: str) -> None:
    """Remove from Redis what RQ kept for `queue`: its registries, jobs, results and workers."""
    jobs = [key for key in records(connection, "rq:job:*") if connection.hget(key, "origin") == queue.encode()]
    workers = [key for key in records(connection, "rq:worker:*") if connection.hget(key, "queues") == queue.encode()]
    names = [queue.encode(), *(key.split(b":")[2] for key in jobs + workers)]
    keys = {key for name in names for key in connection.scan_iter(b"*" + name + b"*")}
    connection.srem("rq:queues", f"rq:queue:{queue}")
    if workers:
        connection.srem("rq:workers", *workers)
    if keys:
        connection.delete(*keys)


def records(connection: Redis, pattern: str) -> list[bytes]:
    """The keys of RQ's records (`rq:<kind>:<id>` hashes) that match `pattern`."""
    keys = connection.scan_iter(pattern)
    return [key for key in keys if key.count(b":") == 2 and connection.type(key) == b"hash"]


@dataclass
class Workers:
    """`pulp-sync worker` subprocesses on one queue, with their logs; all stopped at the end."""

    queue: str
    env: dict[str, str]
    logs: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, worker_class: str, *options: str) -> subprocess.Popen[bytes]:
        log = (self.logs / f"worker-{len(self.processes)}.log").open("wb")
        command = [str(PULP_SYNC), "worker", "--worker-class", worker_class, "--queue", self.queue, *options]
        process = subprocess.Popen(command, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self.processes.append(process)
        return process

    def output(self) -> str:
        return "\n".join(log.read_text(errors="replace") for log in sorted(self.logs.glob("worker-*.log")))

    def stop(self) -> None:
        """SIGTERM (RQ's warm shutdown) to every worker at once, then wait; SIGKILL any that hangs."""
        running = [process for process in self.processes if process.poll() is None]
        for process in running:
            process.terminate()
        for process in running:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def redis() -> Redis:
    return redis_connection()


@pytest.fixture
def queue(redis: Redis) -> Iterator[str]:
    """A queue of this test's own, the one dispatch_sync uses here; removed from Redis afterwards."""
    name = f"pulp-sync-test-{uuid.uuid4().hex[:12]}"
    try:
        with override_settings(PULP_SYNC_QUEUE=name):
            yield name
    finally:
        forget_queue(redis, name)


@pytest.fixture
def workers(queue: str, tmp_path: Path) -> Iterator[Workers]:
    """Workers on this test's queue and database (conftest's PULP_SYNC_HOME, in the environment)."""
    started = Workers(queue, dict(os.environ), tmp_path)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """big/: eight files of 256 kB, slow to download from `slow_server`."""
    root = tmp_path_factory.mktemp("big-tree")
    write_repository(root / "big", {f"big-{n}.bin": os.urandom(256_000) for n in range(8)})
    return root


@pytest.fixture(scope="module")
def slow_server(big_tree: Path) -> Iterator[str]:
    with serve_in_background(big_tree, SLOW) as running:
        yield running.url


@pytest.fixture(scope="module")
def fast_server(big_tree: Path) -> Iterator[str]:
    with serve_in_background(big_tree) as running:
        yield running.url


def sync_source(url: str, name: str = "repo", concurrency: int = 4) -> tuple[Repository, Remote]:
    remote = Remote.objects.create(name=name, url=url, downloader="futures", download_concurrency=concurrency)
    return Repository.objects.create(name=name), remote


def finished(task: Task, workers: Workers) -> Task:
    """The task once it has finished; the workers' logs if it does not."""
    try:
        return wait_for(task, timeout=FINISH_SECONDS)
    except TimeoutError as error:
        raise AssertionError(f"{error}; worker output:\n{workers.output()}") from error


def test_inline_dispatch_runs_the_sync_and_records_it(db: Path, server: str) -> None:
    repository, remote = sync_source(server + "good/PULP_MANIFEST")
    task = dispatch_sync(repository, remote)

    assert (task.state, task.name, task.job_id, task.error) == (TaskState.COMPLETED, "sync", "", "")
    assert task.worker == f"{socket.gethostname()}:{os.getpid()}"
    assert task.created <= task.started <= task.finished  # type: ignore[operator]
    assert (task.artifacts_done, task.artifacts_total) == (11, 11)
    assert task.bytes_done == task.bytes_total == task.report["bytes_downloaded"] > 0  # type: ignore[index]
    latest = repository.latest_version()
    assert latest is not None and latest.number == 1 and task.created_version == latest
    assert (task.report["version"], task.report["downloader"]) == (1, "futures")  # type: ignore[index]


def test_unknown_tasking_is_refused(db: Path, server: str) -> None:
    with pytest.raises(ValueError, match="tasking must be one of inline, rq, not 'celery'"):
        dispatch_sync(*sync_source(server + "good/PULP_MANIFEST"), tasking="celery")
    assert not Task.objects.exists()


@pytest.mark.parametrize("worker_class", ["fork", "simple"])
def test_sync_on_an_rq_worker(db: Path, server: str, workers: Workers, worker_class: str) -> None:
    """`sync --tasking rq` waits for the worker and reports as inline does, an auto concurrency's trajectory
    too (the worker runs the controller); a failed sync fails its task."""
    workers.start(worker_class)
    good = invoke("sync", server + "good/PULP_MANIFEST", "--tasking", "rq", "--json", "--downloader", "futures",
                  "--concurrency", "auto")
    missing = invoke("sync", server + "missing/PULP_MANIFEST", "--tasking", "rq")

    assert good.exit_code == 0, good.stderr + workers.output()
    assert (json.loads(good.stdout)["version"], json.loads(good.stdout)["downloader"]) == (1, "futures")
    task = Task.objects.get(repository__name="good")
    assert (task.state, task.error, task.job_id) == (TaskState.COMPLETED, "", str(task.pk))
    assert task.worker.startswith(f"{socket.gethostname()}.{workers.processes[0].pid}.")
    assert task.created <= task.started <= task.finished  # type: ignore[operator]
    assert (task.artifacts_done, task.artifacts_total, task.report["artifacts_downloaded"]) == (11, 11, 11)
    assert task.report["auto_concurrency"] is True and task.report["concurrency_trajectory"][0]["seconds"] == 0.0
    assert json.loads(good.stdout)["concurrency_trajectory"] == task.report["concurrency_trajectory"]
    assert task.bytes_done == task.bytes_total == task.report["bytes_downloaded"] > 0
    assert task.created_version is not None and task.created_version.number == 1

    assert missing.exit_code == 1 and missing.stdout == ""
    assert missing.stderr.startswith("Error: could not download gone.iso after 1 attempt(s): HTTP 404 Not Found")
    failed = Task.objects.get(repository__name="missing")
    assert (failed.state, f"Error: {failed.error}\n") == (TaskState.FAILED, missing.stderr)
    assert failed.report is not None and (failed.report["failures"], failed.report["version"]) == (1, None)
    assert failed.created_version is None and not RepositoryVersion.objects.filter(repository__name="missing")
    assert_store_is_sound()


def test_task_errors_hide_passwords(db: Path, server: str) -> None:
    host = server.removeprefix("http://")
    remote = Remote.objects.create(name="secret", url=f"http://user:url-secret@{host}nowhere/PULP_MANIFEST")
    remote.username, remote.password = "user", "field-secret"
    remote.save()
    task = dispatch_sync(Repository.objects.create(name="secret"), remote)

    assert task.state == TaskState.FAILED and "user:***@" in task.error, task.error
    assert "url-secret" not in task.error and "field-secret" not in task.error


def test_unreachable_redis_fails_the_task_saying_so(db: Path, server: str) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with override_settings(REDIS_URL=f"redis://:redis-secret@127.0.0.1:{port}/0"):
        task = dispatch_sync(*sync_source(server + "good/PULP_MANIFEST"), tasking="rq")
    assert task.state == TaskState.FAILED
    assert task.error.startswith(f"the task could not be queued on Redis at redis://:***@127.0.0.1:{port}/0: Error ")
    assert "Connection refused" in task.error and "redis-secret" not in task.error


def test_wait_for_gives_up_after_its_timeout(db: Path, server: str, queue: str) -> None:
    task = dispatch_sync(*sync_source(server + "good/PULP_MANIFEST"), tasking="rq")
    with pytest.raises(TimeoutError, match=f"task {task.pk} is still waiting after 0.3 s"):
        wait_for(task, timeout=0.3)


def test_a_task_whose_job_left_redis_is_failed(db: Path, server: str, queue: str, redis: Redis) -> None:
    task = dispatch_sync(*sync_source(server + "good/PULP_MANIFEST"), tasking="rq")
    Job.fetch(task.job_id, connection=redis).delete()
    assert reap_abandoned_tasks() == [], "a task just dispatched may not have reached Redis yet"

    Task.objects.filter(pk=task.pk).update(created=timezone.now() - timedelta(minutes=2))
    assert reap_abandoned_tasks() == [str(task.pk)]
    task.refresh_from_db()
    assert task.state == TaskState.FAILED
    assert task.error == "its RQ job is no longer in Redis; the sync was abandoned: sync again to finish it"
    assert reap_abandoned_tasks() == []


def test_a_job_rq_calls_abandoned_fails_unless_its_process_lives_here(
    db: Path, server: str, queue: str, redis: Redis
) -> None:
    """RQ's StartedJobRegistry cleanup calls the failure callback when a job's heartbeat lapsed."""
    task = dispatch_sync(*sync_source(server + "good/PULP_MANIFEST"), tasking="rq")
    job = Job.fetch(task.job_id, connection=redis)
    job.meta["process"] = f"{socket.gethostname()}:{os.getpid()}"
    on_job_failure(job, redis, AbandonedJobError, AbandonedJobError(), None)
    task.refresh_from_db()
    assert task.state == TaskState.WAITING, "a live process on this host finishes its task"

    job.meta["process"] = "another-host:1234"
    on_job_failure(job, redis, AbandonedJobError, AbandonedJobError(), None)
    task.refresh_from_db()
    assert task.state == TaskState.FAILED
    assert task.error == "its worker stopped sending heartbeats; the sync was abandoned: sync again to finish it"


@pytest.mark.parametrize("worker_class", ["fork", "simple"])
def test_a_worker_killed_mid_sync(
    db: Path, slow_server: str, fast_server: str, workers: Workers, redis: Redis, worker_class: str
) -> None:
    """SIGKILL the process running a sync: its task fails, no partial file stays, the next sync completes.

    The forking worker notices its work horse's death itself; a SimpleWorker's death is noticed by
    `pulp-sync tasks` (and by workers when they start), and a second worker runs the next sync.
    """
    repository, remote = sync_source(slow_server + "big/PULP_MANIFEST", concurrency=2)
    for _ in range(1 if worker_class == "fork" else 2):
        workers.start(worker_class)
    task = dispatch_sync(repository, remote, tasking="rq")
    store = artifact_store()
    while not (task.artifacts_done and list(store.temp_dir.glob(f"task-{task.pk}-*/*"))):
        assert not task.is_finished and all(worker.poll() is None for worker in workers.processes), workers.output()
        time.sleep(0.05)
        task.refresh_from_db()
    process = Job.fetch(task.job_id, connection=redis).meta["process"]
    os.kill(int(process.rpartition(":")[2]), signal.SIGKILL)

    if worker_class == "fork":
        task = finished(task, workers)
        cause = "the work horse running it (pid "
        assert ") was killed by SIGKILL; the sync was abandoned: sync again to finish it" in task.error
    else:
        killed = next(worker for worker in workers.processes if process.endswith(f":{worker.pid}"))
        killed.wait(timeout=FINISH_SECONDS)
        listed = invoke("tasks", "--json")
        assert [(each["id"], each["state"]) for each in json.loads(listed.stdout)] == [(str(task.pk), "failed")]
        task.refresh_from_db()
        cause = f"its worker process ({process}) is gone"
    assert task.state == TaskState.FAILED and task.error.startswith(cause), task.error
    assert task.created_version is None and not RepositoryVersion.objects.exists()
    assert list(store.temp_dir.iterdir()) == [], "the killed sync's partial downloads are removed"

    remote.url = fast_server + "big/PULP_MANIFEST"
    remote.save()
    again = finished(dispatch_sync(repository, remote, tasking="rq"), workers)
    assert again.state == TaskState.COMPLETED, again.error
    assert again.created_version is not None and again.created_version.number == 1
    assert again.report["artifacts_skipped"] + again.report["artifacts_downloaded"] == 8
    assert_store_is_sound()


def pulp_sync_json(env: dict[str, str], *args: str) -> Any:
    """Run `pulp-sync ARGS --json` in a subprocess and parse what it prints."""
    result = subprocess.run([str(PULP_SYNC), *args, "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(("engine", "worker_class"), [("postgresql", "simple"), ("mysql", "fork")])
def test_sync_through_rq_on_server_databases(
    engine: str, worker_class: str, server: str, tmp_path: Path, redis: Redis
) -> None:
    """As an operator would, on PostgreSQL and MariaDB (sqlite: the tests above): `sync --no-wait`,
    `worker --burst`, then `tasks`, each in a subprocess."""
    queue = f"pulp-sync-test-{uuid.uuid4().hex[:12]}"
    with throwaway_database(engine, tmp_path) as url:
        env = {**os.environ, "DATABASE_URL": url, "PULP_SYNC_HOME": str(tmp_path / "home"), "PULP_SYNC_QUEUE": queue}
        try:
            queued = pulp_sync_json(env, "sync", server + "good/PULP_MANIFEST", "--tasking", "rq", "--no-wait")
            worker = [str(PULP_SYNC), "worker", "--burst", "--worker-class", worker_class]
            burst = subprocess.run(worker, env=env, capture_output=True, text=True, timeout=120)
            listed = pulp_sync_json(env, "tasks")
        finally:
            forget_queue(redis, queue)
    assert (queued["state"], queued["repository"], queued["job_id"]) == ("waiting", "good", queued["id"])
    assert burst.returncode == 0, burst.stderr
    assert [(task["id"], task["state"], task["error"]) for task in listed] == [(queued["id"], "completed", "")]
    report = listed[0]["report"]
    assert (report["version"], report["artifacts_downloaded"], listed[0]["created_version"]) == (1, 11, 1)
    assert (listed[0]["artifacts_done"], listed[0]["bytes_done"]) == (11, report["bytes_downloaded"])


def test_tasks_cancel_cancels_a_waiting_task_once(db: Path, server: str, queue: str) -> None:
    task = dispatch_sync(*sync_source(server + "good/PULP_MANIFEST"), tasking="rq")  # no worker: it waits

    canceled = invoke("tasks", "cancel", str(task.pk))
    assert (canceled.exit_code, canceled.stdout) == (0, f"Canceled task {task.pk}\n"), canceled.output
    task.refresh_from_db()
    assert task.state == TaskState.CANCELED and task.finished is not None
    listed = invoke("tasks", "--state", "canceled", "--json")
    assert [row["id"] for row in json.loads(listed.stdout)] == [str(task.pk)], listed.output

    again = invoke("tasks", "cancel", str(task.pk))
    assert again.exit_code == 1 and again.stderr == f"Error: task {task.pk} is canceled and cannot be canceled\n"
    unknown = invoke("tasks", "cancel", "00000000-0000-4000-8000-000000000000")
    assert unknown.exit_code == 1 and "no task 00000000-0000-4000-8000-000000000000" in unknown.stderr
    assert invoke("tasks", "cancel", "not-a-task").exit_code == 2


_QUEUE_NAME = ("from pulp_sync import database; database.setup(); "
               "from pulp_sync.tasking.queues import queue_name; print(queue_name())")


def test_two_installations_on_one_redis_keep_their_jobs_apart(server: str, tmp_path: Path, redis: Redis) -> None:
    """Two databases on one PostgreSQL server, one Redis, no PULP_SYNC_QUEUE: each installation gets its
    own queue, the same whichever address its processes reach the database by, and a worker of one
    leaves the other's job alone."""
    with throwaway_database("postgresql", tmp_path / "a") as first, \
            throwaway_database("postgresql", tmp_path / "b") as second:
        base = {key: value for key, value in os.environ.items() if key != "PULP_SYNC_QUEUE"}
        a, b = ({**base, "DATABASE_URL": url, "PULP_SYNC_HOME": str(tmp_path / name)}
                for url, name in ((first, "a"), (second, "b")))
        a_elsewhere = {**a, "DATABASE_URL": first.replace("127.0.0.1", "localhost")}
        assert a_elsewhere["DATABASE_URL"] != first
        queues = [subprocess.run([sys.executable, "-c", _QUEUE_NAME], env=env, capture_output=True, text=True,
                                 timeout=60).stdout.strip() for env in (a, a_elsewhere, b)]
        try:
            assert queues[0] == queues[1] != queues[2] and queues[0].startswith("pulp-sync-"), queues
            queued = pulp_sync_json(a, "sync", server + "good/PULP_MANIFEST", "--tasking", "rq", "--no-wait")
            other = subprocess.run([str(PULP_SYNC), "worker", "--burst"], env=b, capture_output=True, text=True,
                                   timeout=120)
            assert other.returncode == 0, other.stderr
            assert [task["state"] for task in pulp_sync_json(a, "tasks")] == ["waiting"], "b's worker took a's job"
            own = subprocess.run([str(PULP_SYNC), "worker", "--burst"], env=a, capture_output=True, text=True,
                                 timeout=120)
            assert own.returncode == 0, own.stderr
            assert [(task["id"], task["state"]) for task in pulp_sync_json(a, "tasks")] == [(queued["id"], "completed")]
        finally:
            for queue in set(queues):
                forget_queue(redis, queue)


@pytest.mark.parametrize("answer", ["cancel", "leave"])
def test_ctrl_c_while_waiting_for_a_task_asks_whether_to_cancel_it(
    db: Path, server: str, queue: str, answer: str
) -> None:
    """On a terminal (a pty here), no worker running: the task waits until Ctrl-C, then the answer decides.

    The command runs with SIGINT's default action, as a command in a terminal's foreground does: a suite started
    in the background (`./runtests.sh &`, nohup) ignores SIGINT, its children inherit that, and Python then
    installs no KeyboardInterrupt for them (the test waited out its 30 s with nothing on the screen)."""
    env = {**os.environ, "PULP_SYNC_QUEUE": queue}
    primary, secondary = pty.openpty()
    command = ["env", "--default-signal=INT", str(PULP_SYNC), "sync", server + "good/PULP_MANIFEST", "--tasking", "rq"]
    waiting = subprocess.Popen(command, env=env, stdin=secondary, stdout=secondary, stderr=secondary)
    os.close(secondary)
    screen = _read_until(primary, b"to run it")
    waiting.send_signal(signal.SIGINT)
    screen += _read_until(primary, b"leave it running?")
    os.write(primary, f"{answer}\n".encode())
    screen += _read_until(primary, b"\n", after=b"Task ")
    assert waiting.wait(timeout=30) == 130, screen
    os.close(primary)
    [task] = Task.objects.all()
    if answer == "cancel":
        assert task.state == TaskState.CANCELED and f"Task {task.pk} is canceled".encode() in screen
    else:
        assert task.state == TaskState.WAITING and f"pulp-sync tasks cancel {task.pk}".encode() in screen


def _read_until(fd: int, expected: bytes, after: bytes = b"", seconds: float = 30) -> bytes:
    """What the terminal shows until `expected` appears (after `after`, if given); fails after `seconds`."""
    seen, deadline = b"", time.monotonic() + seconds
    while time.monotonic() < deadline:
        if after in seen and expected in seen[seen.index(after) + len(after):]:
            return seen
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the other side closed
                break
    raise AssertionError(f"{expected!r} not seen; the terminal showed {seen!r}")


def _until(done: Any, workers: Workers, what: str) -> None:
    """Poll `done()` until it is true; fail with the workers' logs after FINISH_SECONDS (a bound against
    hanging, not a measurement)."""
    deadline = time.monotonic() + FINISH_SECONDS
    while not done():
        assert time.monotonic() < deadline, f"{what} not seen; worker output:\n{workers.output()}"
        time.sleep(0.05)


@pytest.mark.parametrize("worker_class", ["fork", "simple"])
def test_a_cancel_ends_a_sync_that_waits_for_its_repository(
    db: Path, server: str, workers: Workers, worker_class: str
) -> None:
    """A sync waiting for its repository's lock (held here, as another sync would) ends canceled when it is
    canceled, not when the lock is free (up to PULP_SYNC_REPOSITORY_WAIT), and its worker takes the next task:
    a SimpleWorker, which RQ cannot stop, notices the cancel as it waits."""
    repository, remote = sync_source(server + "good/PULP_MANIFEST")
    workers.start(worker_class)
    with locks.held(f"pulp_sync.repository:{repository.pk}", wait=0):
        task = dispatch_sync(repository, remote, tasking="rq")
        _until(lambda: "running: waiting for it" in workers.output(), workers, "the sync waiting for the lock")
        assert cancel_task(task.pk).state in (TaskState.CANCELING, TaskState.CANCELED)
        task = finished(task, workers)
        assert task.state == TaskState.CANCELED, task.error
    again = finished(dispatch_sync(repository, remote, tasking="rq"), workers)
    assert again.state == TaskState.COMPLETED, again.error


@pytest.mark.parametrize("worker_class", ["fork", "simple"])
def test_a_worker_stopped_cold_mid_sync_fails_its_task_saying_so(
    db: Path, slow_server: str, workers: Workers, worker_class: str
) -> None:
    """Two SIGTERMs (RQ's cold shutdown) to a worker mid-sync: the worker ends the task itself, failed with
    a sentence saying which worker was stopped, and removes its partial downloads. Nothing else reaps it
    here: the test reads the task's row once the worker is gone (wait_for would reap it)."""
    repository, remote = sync_source(slow_server + "big/PULP_MANIFEST", concurrency=1)
    worker = workers.start(worker_class)
    task = dispatch_sync(repository, remote, tasking="rq")
    _until(lambda: Task.objects.filter(pk=task.pk, artifacts_done__gt=0).exists(), workers, "a downloaded artifact")
    worker.send_signal(signal.SIGTERM)
    _until(lambda: "warm shut down requested" in workers.output(), workers, "the warm shutdown")
    time.sleep(1.5)  # RQ ignores a second signal within a second of the first
    worker.send_signal(signal.SIGTERM)
    worker.wait(timeout=FINISH_SECONDS)

    task.refresh_from_db()
    assert task.state == TaskState.FAILED, (task.state, task.error, workers.output())
    assert task.error == (
        f"the worker {task.worker} was stopped (SIGTERM) during the sync; the sync was abandoned: sync again to "
        "finish it"
    )
    assert task.created_version is None and list(artifact_store().temp_dir.iterdir()) == []
