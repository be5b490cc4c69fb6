"""Syncs as tasks: a Task row for each sync, run inline or as an RQ job on a `pulp-sync worker`.

    dispatch_sync ─inline─> run in this process ───────────────────────┐
                  └─rq────> Task (waiting) + job on Redis ─> a worker ──┴─> Task completed | failed

Here: dispatching a task (`dispatch_sync`), waiting for it (`wait_for`), running it (`run_sync_task`, the
RQ job, and inline), canceling it (`cancel_task`), and `end_task`, the one way a task ends (ending.py's,
shared with the reaper, RQ's callbacks and the API's tasks finished in the request). Beside it in
pulp_sync/tasking/: Redis itself, the queue's name and the workers' heartbeats (queues.py), a task's
progress on its row (task_progress.py), and whoever ends a task whose process cannot:

A running task writes its own progress and outcome. When the process running it dies (SIGKILL, the
OOM killer, a lost machine) it cannot, so whoever notices marks it failed and removes its workspace
with the partial downloads in it:
- the forking worker, when the work horse running the task dies (`callbacks.on_work_horse_killed`);
- RQ's StartedJobRegistry cleanup, when the job's worker stopped sending heartbeats (the job's
  failure callback, `callbacks.on_job_failure`);
- the reaper (reaping.py), which every worker runs when it starts and every PULP_SYNC_WORKER_TTL,
  `pulp-sync tasks` runs each time and `wait_for` runs while it waits.

A worker stopped cold (a second SIGTERM or SIGINT: RQ kills the work horse, or raises in a
SimpleWorker's job) ends its task failed, saying which worker was stopped by which signal
(`callbacks.WorkerStopped`; pulp_sync/tasking/worker.py).

`cancel_task` (the API's PATCH {"state": "canceled"}) cancels a waiting task at once and takes its
job off the queue. A running one becomes canceling and is stopped two ways: RQ's stop-job command
kills a forking worker's work horse (the job's stopped callback, `callbacks.on_job_stopped`, then marks
it canceled and removes its workspace), and the sync itself stops at its next progress write, or while
it waits for its repository's lock, when it finds its row canceling (the only way for a SimpleWorker,
which RQ cannot stop, or an inline sync). A sync already past its downloads finishes completed (or
failed), as in Pulp.

A task runs only if the user who dispatched it may still use its remote when it starts
(permissions.may_use_remote, which the API checked when it dispatched it): a role removed meanwhile
fails it before it reaches the remote. So does the user's deletion: the task's `dispatched_by` is then
null, as for a task of the command line, so the RQ job itself carries who dispatched it, and a job whose
dispatcher is no longer on its task's row is refused.

RQ records the job's function in each job as `pulp_sync.tasking.tasks.run_sync_task`, and its callbacks as
`pulp_sync.tasking.callbacks.<name>`: a job queued by a pulp-sync that named them elsewhere must be drained
from the queue before upgrading.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import DatabaseError, transaction
from django.utils import timezone
from redis.exceptions import RedisError
from rq import Callback, Queue
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, get_current_job

from pulp_base.process_names import this_process
from pulp_sync import database, defaults, locks
from pulp_sync.messages import for_the_record, one_line, redact
from pulp_sync.models import Remote, Repository, Task, TaskState
from pulp_sync.permissions import may_use_remote
from pulp_sync.progress import ProgressSink
from pulp_sync.sync.pipeline import SyncError, sync_repository
from pulp_sync.sync.split.board import alive_here_or_beating, on_workers
from pulp_sync.sync.split.forked import Runner, run_shards
from pulp_sync.sync.split.jobs import TAKE_SHARDS
from pulp_sync.tasking.callbacks import on_job_failure, on_job_stopped
from pulp_sync.tasking.ending import end_task, finish_cancel, workspace_prefix
from pulp_sync.tasking.queues import beating, queue_name, redis_connection, redis_location
from pulp_sync.tasking.reaping import reap
from pulp_sync.tasking.task_progress import ProgressFollower, TaskCanceled, TaskProgress

__all__ = ["TASKING", "dispatch_sync", "wait_for", "run_sync_task", "cancel_task", "end_task"]

TASKING = ("inline", "rq")

log = logging.getLogger(__name__)


def dispatch_sync(
    repository: Repository,
    remote: Remote,
    *,
    tasking: str = "inline",
    manifest_file: Path | None = None,
    dispatched_by: User | None = None,
) -> Task:
    """Sync `repository` from `remote` as a task, and return the task.

    `dispatched_by`: the API user who asked for it (who may see and cancel it); None from the CLI.

    `manifest_file`: read the manifest's lines from this local file (see sync_repository); an RQ
    worker must be able to read it at that path.

    inline: run it now, in this process, and return it finished (an unexpected error, such as the
    database going away, is recorded on the task and raised). rq: queue it on `queue_name()` and
    return it waiting; it is queued once the caller's transaction (if any) commits, so that the
    worker finds its row. A task that Redis cannot take is failed, saying why.
    """
    if tasking not in TASKING:
        raise ValueError(f"tasking must be one of {', '.join(TASKING)}, not {tasking!r}")
    task_id = uuid.uuid4()
    job_id = str(task_id) if tasking == "rq" else ""
    task = Task.objects.create(
        id=task_id, name="sync", repository=repository, remote=remote, job_id=job_id, dispatched_by=dispatched_by
    )
    if tasking == "inline":
        _run(task.pk, worker=this_process(), manifest_file=manifest_file)
    else:
        transaction.on_commit(partial(_enqueue, task, manifest_file))
    task.refresh_from_db()
    return task


def wait_for(task: Task, timeout: float | None = None, *, progress: ProgressSink | None = None) -> Task:
    """Poll the task's row until it is completed or failed, and return it; TimeoutError after `timeout` s.

    Every few seconds it also checks that the task's process is still there, so that a killed
    worker ends the wait. `progress` is fed the task's progress as it is written (the CLI's bar).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    next_check = time.monotonic() + defaults.TASK_REAP_SECONDS
    follower = ProgressFollower(progress)
    connection = redis_connection()
    try:
        while True:
            task.refresh_from_db()
            follower.update(task)
            if task.is_finished:
                return task
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise TimeoutError(f"task {task.pk} is still {task.state} after {timeout:g} s")
            if now >= next_check:
                reap(task, connection)
                next_check = now + defaults.TASK_REAP_SECONDS
            time.sleep(defaults.TASK_POLL_SECONDS)
    finally:
        follower.finish()


def run_sync_task(task_id: str, manifest_file: str | None = None, dispatcher: int | None = None) -> str:
    """The RQ job: run the task in this worker's process; its final state. `dispatcher`: the id of the API
    user who dispatched it, if one did; the task's row forgets it when that user is deleted.

    It records which process runs it (host:pid, in the job's meta) for the reaper (reaping.py), and runs
    on fresh database connections (database.fresh_connections says why).
    """
    job = get_current_job()
    assert job is not None, "run_sync_task runs as an RQ job"
    job.meta["process"] = this_process()
    job.save_meta()
    with database.fresh_connections():
        local = None if manifest_file is None else Path(manifest_file)
        state = str(_run(task_id, job.worker_name or "", manifest_file=local, queue=job.origin, dispatcher=dispatcher))
    log.info("Task %s %s", task_id, state)
    return state


def cancel_task(task_id: Any) -> Task:
    """Cancel the task if it is unfinished (see the module's docstring); the task as it is now.

    A waiting task is canceled; a running one is canceling until it stops; a finished one, or one
    already canceling, is left as it is. Redis being unreachable does not stop a cancel: the task's
    row decides, and a running sync reads it.
    """
    waiting = Task.objects.filter(pk=task_id, state=TaskState.WAITING)
    if waiting.update(state=TaskState.CANCELED, finished=timezone.now()):
        _redis_command(task_id, Job.cancel)  # a worker that took the job meanwhile finds the task canceled
    elif Task.objects.filter(pk=task_id, state=TaskState.RUNNING).update(state=TaskState.CANCELING):
        _redis_command(task_id, _stop_job)
    return Task.objects.get(pk=task_id)


def _enqueue(task: Task, manifest_file: Path | None = None) -> None:
    """Put the task's job on the queue; if Redis cannot take it, the task fails saying so."""
    queue = Queue(queue_name(), connection=redis_connection())
    try:
        queue.enqueue(
            run_sync_task,
            str(task.pk),
            None if manifest_file is None else str(manifest_file.resolve()),
            task.dispatched_by_id,
            job_id=task.job_id,
            job_timeout=defaults.JOB_TIMEOUT,
            result_ttl=defaults.JOB_RECORD_SECONDS,
            failure_ttl=defaults.JOB_RECORD_SECONDS,
            on_failure=Callback(on_job_failure),
            on_stopped=Callback(on_job_stopped),
        )
    except RedisError as error:
        why = f"the task could not be queued on Redis at {redis_location()}: {one_line(error)}"
        end_task(task.pk, TaskState.FAILED, error=why)


def _run(task_id: Any, worker: str, manifest_file: Path | None = None, queue: str | None = None,
         dispatcher: int | None = None) -> str:
    """Run a waiting task here, from running to completed or failed; its final state. `queue`: the RQ
    queue the task came from, where its split sync's shards go (None: inline, shards in processes here).
    `dispatcher`: the id of the user who dispatched it, as its RQ job recorded it (run_sync_task)."""
    started = Task.objects.filter(pk=task_id, state=TaskState.WAITING)
    if not started.update(state=TaskState.RUNNING, started=timezone.now(), worker=worker):
        state = Task.objects.filter(pk=task_id).values_list("state", flat=True).first()
        if state is None:
            raise LookupError(f"task {task_id} is not in this worker's database ({database.describe()}): another "
                              f"installation queued it on {queue_name()}; give each its own PULP_SYNC_QUEUE")
        return state  # it ended before it ran (found abandoned)
    task = Task.objects.select_related("remote", "repository", "dispatched_by").get(pk=task_id)
    refused = _why_refused(task, dispatcher)
    if refused is not None:
        end_task(task_id, TaskState.FAILED, error=refused)
        return TaskState.FAILED
    remote, repository = task.remote, task.repository
    assert remote is not None and repository is not None, "refused above"
    progress = TaskProgress(task_id)
    try:
        with locks.interrupting(progress.check):
            report = sync_repository(remote, repository, progress, workspace_prefix(task_id), manifest_file,
                                     _shard_runner(task, worker, queue))
    except TaskCanceled:
        finish_cancel(task_id)
        return TaskState.CANCELED
    except SyncError as error:
        failed = error.report.as_dict() if error.report else None
        end_task(task_id, TaskState.FAILED, error=_message(error, remote), report=failed)
        return TaskState.FAILED
    except Exception as error:
        end_task(task_id, TaskState.FAILED, error=_message(error, remote))
        raise
    version = None if report.version is None else repository.versions.get(number=report.version)
    end_task(task_id, TaskState.COMPLETED, report=report.as_dict(), created_version=version)
    return TaskState.COMPLETED


def _shard_runner(task: Task, worker: str, queue: str | None) -> Runner:
    """How the task's sync runs its shards, if it splits: an RQ task's on the board, for every worker of its
    queue to take (pulp_sync.sync.split.board); an inline task's in processes on this host."""
    if queue is None:
        return run_shards
    connection = redis_connection()
    alive = alive_here_or_beating(partial(beating, connection))
    assert task.remote is not None, "refused before"
    return on_workers(connection, queue, TAKE_SHARDS, str(task.pk), task.remote.pk, worker, alive)


def _why_refused(task: Task, dispatcher: int | None = None) -> str | None:
    """Why the task may not run, or None if it may: its remote or repository is gone, the user who
    dispatched it (`dispatcher`, from its job) was deleted, or they may no longer use its remote
    (permissions.may_use_remote, as the API checked when it dispatched it: a role removed since then ends
    their use of the remote and its credentials)."""
    if task.remote is None or task.repository is None:
        return "its remote or repository was deleted before it ran"
    if dispatcher is not None and task.dispatched_by_id != dispatcher:
        return "the user who started it no longer exists: the sync was refused before it reached the remote"
    user = task.dispatched_by
    if user is not None and not may_use_remote(user, task.remote):
        return (f"{user.get_username()}, who started it, may no longer use its remote (they do not see it): the "
                "sync was refused before it reached the remote")
    return None


def _message(error: BaseException, remote: Remote) -> str:
    """The error in one line for people, the remote's passwords and any URL's password hidden, printable
    and bounded (messages.for_the_record)."""
    if isinstance(error, SyncError):
        text = one_line(error)
    elif isinstance(error, DatabaseError):
        text = database.explain(error)
    else:
        text = f"{type(error).__name__}: {one_line(error)}"
    return for_the_record(redact(text, (remote.password, remote.proxy_password)))


def _redis_command(task_id: Any, command: Callable[[Job], object]) -> None:
    """Apply `command` to the task's RQ job, if it has one; a Redis failure is logged, not raised."""
    job_id = Task.objects.values_list("job_id", flat=True).get(pk=task_id)
    if not job_id:
        return
    try:
        command(Job.fetch(job_id, connection=redis_connection()))
    except (NoSuchJobError, InvalidJobOperation):
        pass  # the job is gone or not on a worker: there is nothing to stop
    except RedisError as error:
        log.warning("Could not reach Redis at %s to cancel task %s: %s", redis_location(), task_id, one_line(error))


def _stop_job(job: Job) -> None:
    """Ask the worker running the job to stop it (RQ kills a forking worker's work horse)."""
    send_stop_job_command(job.connection, job.id)

