"""What RQ calls when a task's job ends other than by returning: the job's failure and stopped callbacks
(`on_job_failure`, `on_job_stopped`), the forking worker's handler of a dead work horse
(`on_work_horse_killed`), and a worker stopped cold (`WorkerStopped`, `on_worker_stopped`).

They run in the worker's own process (or in RQ's maintenance of its registries), never in the task's: each
ends the task as the task itself no longer can (ending.py), and a failure here must not stop the worker.

RQ records a job's callbacks in the job by dotted path (`pulp_sync.tasking.callbacks.on_job_failure`), as
it records its function (`pulp_sync.tasking.tasks.run_sync_task`): a job queued by a pulp-sync whose
callbacks lived elsewhere names the old path, so drain the queue before upgrading.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

from redis import Redis
from rq.exceptions import AbandonedJobError
from rq.job import Job

from pulp_base.process_names import process_alive
from pulp_sync.messages import for_the_record, one_line, redact
from pulp_sync.models import TaskState
from pulp_sync.tasking.ending import abandon_task, end_task, finish_cancel

__all__ = ["WorkerStopped", "on_worker_stopped", "on_work_horse_killed", "on_job_failure", "on_job_stopped"]

log = logging.getLogger(__name__)


class WorkerStopped(SystemExit):
    """What a worker stopped cold (RQ's cold shutdown: a second SIGTERM or SIGINT) raises instead of a
    bare SystemExit (pulp_sync/tasking/worker.py), so that its task ends saying why (`on_worker_stopped`).

    A SystemExit, so that RQ's loop and the process end as after any cold shutdown (with status 0: the
    sentence is in `cause`, not in the exit code)."""

    def __init__(self, worker: str, signum: int) -> None:
        super().__init__()
        self.cause = f"the worker {worker} was stopped ({signal.Signals(signum).name}) during the sync"


def on_work_horse_killed(job: Job, retpid: int | None, ret_val: int | None, rusage: Any) -> None:
    """RQ's `work_horse_killed_handler`: the forking worker saw the work horse running `job` die.

    It runs in the worker's own process, which must go on taking jobs whatever happens here.
    """
    if ret_val is not None and os.WIFSIGNALED(ret_val):
        how = f"was killed by {signal.Signals(os.WTERMSIG(ret_val)).name}"
    else:
        how = "exited" if ret_val is None else f"exited with status {os.waitstatus_to_exitcode(ret_val)}"
    try:
        abandon_task(job.id, f"the work horse running it (pid {retpid}) {how}")
    except Exception:  # logged; reap_abandoned_tasks catches the task later
        log.exception("Could not record the end of task %s", job.id)


def on_job_failure(job: Job, connection: Redis, exc_type: type[BaseException] | None, exc: Any, tb: Any) -> None:
    """The job's RQ failure callback: the job raised, or RQ found it abandoned (AbandonedJobError).

    A task records its own failures, so a raise changes a task only if it failed before it could.
    RQ calls a job abandoned when its worker's heartbeat lapsed; a process on this host that is
    still alive is left to finish.
    """
    if exc_type is not None and issubclass(exc_type, AbandonedJobError):
        if process_alive(job.meta.get("process", "")) is not True:
            abandon_task(job.id, "its worker stopped sending heartbeats")
        return
    if isinstance(exc, WorkerStopped):
        on_worker_stopped(job.id, exc)
        return
    name = exc_type.__name__ if exc_type is not None else "Error"
    end_task(job.id, TaskState.FAILED, error=for_the_record(redact(f"{name}: {one_line(exc)}")))


def on_worker_stopped(task_id: str, stopped: WorkerStopped) -> None:
    """The worker running the task was stopped cold: the task ends failed (canceled if it was being
    canceled) saying so, and its workspace is removed. A SimpleWorker's job raised `stopped`, and its
    failure callback comes here; a forking worker comes here itself, as RQ kills and reaps the work horse
    without calling `on_work_horse_killed`. Either way the process is exiting: a failure is logged, and
    reap_abandoned_tasks catches the task later."""
    try:
        abandon_task(task_id, stopped.cause)
    except Exception:  # logged; reap_abandoned_tasks catches the task later
        log.exception("Could not record the end of task %s", task_id)


def on_job_stopped(job: Job, connection: Redis) -> None:
    """The job's RQ stopped callback: RQ killed the work horse on `cancel_task`'s stop-job command.

    It runs in the forking worker's own process, after the horse is gone: the task is canceled and
    the partial downloads in its workspace are removed.
    """
    finish_cancel(job.id)
