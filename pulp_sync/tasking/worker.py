"""`pulp-sync worker`: an RQ worker that takes sync tasks from Redis (see pulp_sync/tasking/tasks.py; its queue and
heartbeat keys are pulp_sync/tasking/queues.py's).

Two process models, a dimension worth measuring: `fork` is RQ's Worker, which forks a work horse
per job (a crash or a leak dies with the horse; each job pays for a fork), `simple` is RQ's
SimpleWorker, which runs every job in its own process.

Both stop as RQ's workers do: the first SIGTERM or SIGINT lets the running task finish (a warm
shutdown), a second stops it (a cold one), and the task ends failed saying the worker was stopped.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from types import FrameType

from django.conf import settings
from rq import SimpleWorker, Worker
from rq.job import Job
from rq.logutils import setup_loghandlers
from rq.queue import Queue
from rq.worker import BaseWorker

from pulp_sync.database import close_before_fork, fresh_connections

__all__ = ["ForkWorker", "InProcessWorker", "WORKER_CLASSES", "run_worker"]

log = logging.getLogger(__name__)


class _SaysWhyItStopped(BaseWorker):
    """RQ's cold shutdown ends with a bare SystemExit, which leaves a forking worker's task running
    (RQ kills and reaps the work horse itself, so `on_work_horse_killed` never hears of it) and a
    SimpleWorker's failed with only `SystemExit: `. Here it raises callbacks.WorkerStopped, saying which
    worker was stopped by which signal: a SimpleWorker raises it in its task's sync, whose failure
    callback ends the task; a forking worker, whose horse is gone, ends the task itself first."""

    def request_force_stop(self, signum: int, frame: FrameType | None) -> None:
        from pulp_sync.tasking.callbacks import WorkerStopped, on_worker_stopped

        job_id, horse = self.get_current_job_id(), self.horse_pid
        try:
            super().request_force_stop(signum, frame)
        except SystemExit:
            stopped = WorkerStopped(self.name, signum)
            if job_id and horse:
                on_worker_stopped(job_id, stopped)
            raise stopped from None


class ForkWorker(_SaysWhyItStopped, Worker):
    """RQ's forking Worker, closing Django's database connections before each fork.

    Two processes must never share a connection (Django's rule): this one opens one when it records
    a dead work horse or an abandoned task, and a horse forked after that would inherit it.
    """

    def fork_work_horse(self, job: Job, queue: Queue) -> None:
        close_before_fork()
        super().fork_work_horse(job, queue)


class InProcessWorker(_SaysWhyItStopped, SimpleWorker):
    """RQ's SimpleWorker, which runs every job in its own process; its task says so when it is stopped cold."""


WORKER_CLASSES: dict[str, type[BaseWorker]] = {"fork": ForkWorker, "simple": InProcessWorker}


def run_worker(worker_class: str = "fork", queue: str | None = None, burst: bool = False) -> None:
    """Fail the tasks that dead workers abandoned, then run the queue's jobs until stopped.

    With `burst`, stop once the queue is empty. Django must be set up.
    """
    from pulp_sync.tasking.callbacks import on_work_horse_killed
    from pulp_sync.tasking.queues import queue_name, redis_connection
    from pulp_sync.tasking.reaping import reap_abandoned_tasks

    connection = redis_connection()
    setup_loghandlers("INFO", name="pulp_sync")
    with fresh_connections():  # closed before the worker waits for jobs and forks their horses
        reap_abandoned_tasks(connection)
    name = _worker_name()
    worker = WORKER_CLASSES[worker_class](
        [queue or queue_name()],
        connection=connection,
        name=name,
        work_horse_killed_handler=on_work_horse_killed,
    )
    heartbeat = _Heartbeat(name, settings.PULP_SYNC_WORKER_TTL)
    heartbeat.start()
    try:
        worker.work(burst=burst, logging_level="INFO")
    finally:
        heartbeat.stop()


class _Heartbeat(threading.Thread):
    """Says in Redis that this worker lives, and fails the tasks of workers that died, on any host.

    RQ's own worker record outlives a killed worker by a minute or more (a busy worker's record is
    kept for 60 s past its monitoring interval, a fixed margin), and RQ finds abandoned jobs only in
    its maintenance, every 10 minutes. Here the worker's `pulp-sync:alive:<name>` key (queues.still_alive)
    is renewed every third of PULP_SYNC_WORKER_TTL and lapses a TTL after the last renewal, and every TTL
    the living workers reap the tasks whose worker's key lapsed (reaping.reap_abandoned_tasks): a host that goes
    away takes its tasks down with it within about two TTLs, as pulpcore's workers do with theirs.

    A thread, so that a long job in a SimpleWorker, or a forking worker watching its work horse, still
    beats. Each beat runs on fresh database connections, closed after it: a work horse forked meanwhile
    exits with os._exit and never touches them.
    """

    def __init__(self, name: str, ttl: float) -> None:
        super().__init__(name="pulp-sync-heartbeat", daemon=True)
        self._worker, self._ttl = name, ttl
        self._stopped = threading.Event()

    def run(self) -> None:
        from pulp_sync.tasking.queues import redis_connection, still_alive
        from pulp_sync.tasking.reaping import reap_abandoned_tasks

        connection = redis_connection()
        next_reap = time.monotonic() + self._ttl
        while True:
            try:
                with fresh_connections():
                    still_alive(connection, self._worker, self._ttl)
                    if time.monotonic() >= next_reap:
                        next_reap = time.monotonic() + self._ttl
                        reap_abandoned_tasks(connection)
            except Exception:  # Redis or the database away for a moment: beat again later
                log.exception("Worker %s could not send its heartbeat or reap abandoned tasks", self._worker)
            if self._stopped.wait(self._ttl / 3):
                return

    def stop(self) -> None:
        self._stopped.set()
        self.join(timeout=self._ttl)


def _worker_name() -> str:
    """host.pid and a random suffix: readable in `pulp-sync tasks`, and unique even when a pid is
    reused while a killed worker's record still lingers in Redis."""
    return f"{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(2)}"
