"""`pulp-sync worker`: an RQ worker that takes sync tasks from Redis (see pulp_sync/tasks.py).

Two process models, a dimension worth measuring: `fork` is RQ's Worker, which forks a work horse
per job (a crash or a leak dies with the horse; each job pays for a fork), `simple` is RQ's
SimpleWorker, which runs every job in its own process.
"""

from __future__ import annotations

import os
import secrets
import socket

from django.db import connections
from rq import SimpleWorker, Worker
from rq.job import Job
from rq.logutils import setup_loghandlers
from rq.queue import Queue
from rq.worker import BaseWorker

__all__ = ["ForkWorker", "WORKER_CLASSES", "run_worker"]


class ForkWorker(Worker):
    """RQ's forking Worker, closing Django's database connections before each fork.

    Two processes must never share a connection (Django's rule): this one opens one when it records
    a dead work horse or an abandoned task, and a horse forked after that would inherit it.
    """

    def fork_work_horse(self, job: Job, queue: Queue) -> None:
        connections.close_all()
        super().fork_work_horse(job, queue)


WORKER_CLASSES: dict[str, type[BaseWorker]] = {"fork": ForkWorker, "simple": SimpleWorker}


def run_worker(worker_class: str = "fork", queue: str | None = None, burst: bool = False) -> None:
    """Fail the tasks that dead workers abandoned, then run the queue's jobs until stopped.

    With `burst`, stop once the queue is empty. Django must be set up.
    """
    from pulp_sync.tasks import on_work_horse_killed, queue_name, reap_abandoned_tasks, redis_connection

    connection = redis_connection()
    setup_loghandlers("INFO", name="pulp_sync")
    reap_abandoned_tasks(connection)
    connections.close_all()
    worker = WORKER_CLASSES[worker_class](
        [queue or queue_name()],
        connection=connection,
        name=_worker_name(),
        work_horse_killed_handler=on_work_horse_killed,
    )
    worker.work(burst=burst, logging_level="INFO")


def _worker_name() -> str:
    """host.pid and a random suffix: readable in `pulp-sync tasks`, and unique even when a pid is
    reused while a killed worker's record still lingers in Redis."""
    return f"{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(2)}"
