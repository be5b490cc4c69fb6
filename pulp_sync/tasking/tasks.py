"""Syncs as tasks: a Task row for each sync, run inline or as an RQ job on a `pulp-sync worker`.

    dispatch_sync ─inline─> run in this process ───────────────────────┐
                  └─rq────> Task (waiting) + job on Redis ─> a worker ──┴─> Task completed | failed

A running task writes its own progress and outcome. When the process running it dies (SIGKILL, the
OOM killer, a lost machine) it cannot, so whoever notices marks it failed and removes its workspace
with the partial downloads in it:
- the forking worker, when the work horse running the task dies (`on_work_horse_killed`);
- RQ's StartedJobRegistry cleanup, when the job's worker stopped sending heartbeats (the job's
  failure callback, `on_job_failure`);
- `reap_abandoned_tasks`, which every worker runs when it starts and every PULP_SYNC_WORKER_TTL,
  `pulp-sync tasks` runs each time and `wait_for` runs while it waits: a task's process on this host
  is checked by its pid, one elsewhere through Redis (its job gone or ended, its worker's heartbeat,
  `queues.still_alive`, lapsed).

A worker stopped cold (a second SIGTERM or SIGINT: RQ kills the work horse, or raises in a
SimpleWorker's job) ends its task failed, saying which worker was stopped by which signal
(`WorkerStopped`; pulp_sync/tasking/worker.py).

`cancel_task` (the API's PATCH {"state": "canceled"}) cancels a waiting task at once and takes its
job off the queue. A running one becomes canceling and is stopped two ways: RQ's stop-job command
kills a forking worker's work horse (the job's stopped callback, `on_job_stopped`, then marks it
canceled and removes its workspace), and the sync itself stops at its next progress write, or while
it waits for its repository's lock, when it finds its row canceling (the only way for a SimpleWorker,
which RQ cannot stop, or an inline sync). A sync already past its downloads finishes completed (or
failed), as in Pulp.

A task runs only if the user who dispatched it may still use its remote when it starts
(permissions.may_use_remote, which the API checked when it dispatched it): a role removed meanwhile
fails it before it reaches the remote. So does the user's deletion: the task's `dispatched_by` is then
null, as for a task of the command line, so the RQ job itself carries who dispatched it, and a job whose
dispatcher is no longer on its task's row is refused.

Redis itself (the connection, this installation's queue, the workers' heartbeats) is pulp_sync/tasking/queues.py's.
`run_sync_task`, `on_job_failure` and `on_job_stopped` stay here by name: RQ records them in each job as
`pulp_sync.tasking.tasks.<name>`, and a job queued before an upgrade must still find them.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import DatabaseError, transaction
from django.utils import timezone
from redis import Redis
from redis.exceptions import RedisError
from rq import Callback, Queue
from rq.command import send_stop_job_command
from rq.exceptions import AbandonedJobError, InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus, get_current_job

from pulp_base.process_names import process_alive, this_process
from pulp_sync import database, defaults, locks
from pulp_sync.content.store import artifact_store
from pulp_sync.messages import for_the_record, one_line, redact
from pulp_sync.models import Remote, Repository, Task, TaskState
from pulp_sync.permissions import may_use_remote
from pulp_sync.progress import ProgressSink, ShardProgress, Throttle
from pulp_sync.sync.pipeline import SyncError, sync_repository
from pulp_sync.sync.split.board import Board, abandon, alive_here_or_beating, on_workers
from pulp_sync.sync.split.forked import Runner, run_shards
from pulp_sync.sync.split.jobs import TAKE_SHARDS
from pulp_sync.tasking.queues import beating, queue_name, redis_connection, redis_location

__all__ = [
    "TASKING",
    "dispatch_sync",
    "wait_for",
    "run_sync_task",
    "cancel_task",
    "TaskCanceled",
    "WorkerStopped",
    "on_worker_stopped",
    "reap_abandoned_tasks",
    "on_work_horse_killed",
    "on_job_failure",
    "on_job_stopped",
    "TaskProgress",
    "end_task",
]

TASKING = ("inline", "rq")
_ENQUEUE_SECONDS = timedelta(seconds=60)
"""How long a waiting task's job may be missing from Redis before the task counts as abandoned: its row
is committed first and its job queued just after, so a reaper in another process can look in between."""
_UNFINISHED = (TaskState.WAITING, TaskState.RUNNING, TaskState.CANCELING)
_ENDED_JOB = (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED)

log = logging.getLogger(__name__)


class TaskCanceled(Exception):
    """Raised inside a running task whose row says it is being canceled: the task stops there."""


class WorkerStopped(SystemExit):
    """What a worker stopped cold (RQ's cold shutdown: a second SIGTERM or SIGINT) raises instead of a
    bare SystemExit (pulp_sync/tasking/worker.py), so that its task ends saying why (`on_worker_stopped`).

    A SystemExit, so that RQ's loop and the process end as after any cold shutdown (with status 0: the
    sentence is in `cause`, not in the exit code)."""

    def __init__(self, worker: str, signum: int) -> None:
        super().__init__()
        self.cause = f"the worker {worker} was stopped ({signal.Signals(signum).name}) during the sync"


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
    follower = _ProgressFollower(progress)
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
                _reap(task, connection)
                next_check = now + defaults.TASK_REAP_SECONDS
            time.sleep(defaults.TASK_POLL_SECONDS)
    finally:
        follower.finish()


def run_sync_task(task_id: str, manifest_file: str | None = None, dispatcher: int | None = None) -> str:
    """The RQ job: run the task in this worker's process; its final state. `dispatcher`: the id of the API
    user who dispatched it, if one did; the task's row forgets it when that user is deleted.

    It records which process runs it (host:pid, in the job's meta) for `reap_abandoned_tasks`, and runs
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


def end_task(task_id: Any, state: TaskState, **fields: Any) -> bool:
    """Finish the task in `state`, with `fields` (its error, or its report and the version it made),
    unless it has finished already; whether this call finished it.

    The one way a task ends other than canceled: a sync, its RQ callbacks and reapers, and the API's
    tasks finished in the request (api/pulp/finished.py). One conditional update, so that a task ended
    meanwhile by another process (a reaper, a cancel) keeps the end it was given first."""
    unfinished = Task.objects.filter(pk=task_id, state__in=_UNFINISHED)
    return unfinished.update(state=state, finished=timezone.now(), **fields) == 1


def reap_abandoned_tasks(connection: Redis | None = None) -> list[str]:
    """Mark failed every unfinished task whose process is gone, and remove its workspace; their ids.

    Raises RedisError if an RQ task needs a look at Redis and Redis cannot be reached.
    """
    connection = connection or redis_connection()
    unfinished = Task.objects.filter(state__in=_UNFINISHED).only("pk", "state", "worker", "job_id", "created")
    return [str(task.pk) for task in unfinished if _reap(task, connection)]


def on_work_horse_killed(job: Job, retpid: int | None, ret_val: int | None, rusage: Any) -> None:
    """RQ's `work_horse_killed_handler`: the forking worker saw the work horse running `job` die.

    It runs in the worker's own process, which must go on taking jobs whatever happens here.
    """
    if ret_val is not None and os.WIFSIGNALED(ret_val):
        how = f"was killed by {signal.Signals(os.WTERMSIG(ret_val)).name}"
    else:
        how = "exited" if ret_val is None else f"exited with status {os.waitstatus_to_exitcode(ret_val)}"
    try:
        _abandon(job.id, f"the work horse running it (pid {retpid}) {how}")
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
            _abandon(job.id, "its worker stopped sending heartbeats")
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
        _abandon(task_id, stopped.cause)
    except Exception:  # logged; reap_abandoned_tasks catches the task later
        log.exception("Could not record the end of task %s", task_id)


def on_job_stopped(job: Job, connection: Redis) -> None:
    """The job's RQ stopped callback: RQ killed the work horse on `cancel_task`'s stop-job command.

    It runs in the forking worker's own process, after the horse is gone: the task is canceled and
    the partial downloads in its workspace are removed.
    """
    _finish_cancel(job.id)


class TaskProgress:
    """A ProgressSink that writes a task's progress to its row, at most every `interval` seconds and at the
    finish; and, for a split sync, each shard's (a ShardsSink)."""

    def __init__(self, task_id: Any, interval: float = defaults.PROGRESS_SECONDS) -> None:
        self._tasks = Task.objects.filter(pk=task_id)
        self._throttle = Throttle(interval)
        self._artifacts = 0
        self._bytes = 0
        self._shards: list[ShardProgress] | None = None

    def start(self, total_artifacts: int, total_bytes: int) -> None:
        self._update(artifacts_total=total_artifacts, bytes_total=total_bytes, artifacts_done=0, bytes_done=0,
                     shards=self._shards)
        self._throttle.restart()

    def advance(self, artifacts: int, bytes: int) -> None:
        self._artifacts += artifacts
        self._bytes += bytes
        if self._throttle.due():
            self._write()

    def shards(self, reports: list[ShardProgress]) -> None:
        self._shards = [dict(report) for report in reports]

    def finish(self) -> None:
        self._write()

    def check(self) -> None:
        """Raise TaskCanceled if the task is being canceled: what the sync calls while it waits for its
        repository's lock (locks.interrupting), when it writes no progress."""
        if self._tasks.filter(state=TaskState.CANCELING).exists():
            raise TaskCanceled("the task was canceled")

    def _write(self) -> None:
        self._update(artifacts_done=self._artifacts, bytes_done=self._bytes, shards=self._shards)

    def _update(self, **fields: Any) -> None:
        """Write the progress unless the task is being canceled; then raise TaskCanceled to stop it."""
        if not self._tasks.exclude(state=TaskState.CANCELING).update(**fields):
            raise TaskCanceled("the task was canceled")


class _ProgressFollower:
    """Replays a task's progress, as read from its row, into a ProgressSink (once there is any)."""

    def __init__(self, sink: ProgressSink | None) -> None:
        self._sink = sink
        self._started = False
        self._artifacts = 0
        self._bytes = 0

    def update(self, task: Task) -> None:
        if self._sink is None or not (self._started or task.artifacts_total):
            return
        if not self._started:
            self._sink.start(task.artifacts_total, task.bytes_total)
            self._started = True
        self._sink.advance(task.artifacts_done - self._artifacts, task.bytes_done - self._bytes)
        self._artifacts, self._bytes = task.artifacts_done, task.bytes_done

    def finish(self) -> None:
        if self._sink is not None and self._started:
            self._sink.finish()


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
            report = sync_repository(remote, repository, progress, _workspace_prefix(task_id), manifest_file,
                                     _shard_runner(task, worker, queue))
    except TaskCanceled:
        _finish_cancel(task_id)
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


def _reap(task: Task, connection: Redis) -> bool:
    """Fail the unfinished task if its process is gone; whether it did."""
    cause = _why_abandoned(task, connection)
    return cause is not None and _abandon(task.pk, cause)


def _why_abandoned(task: Task, connection: Redis) -> str | None:
    """Why the unfinished task cannot finish any more (its process is gone), or None while it may."""
    if not task.job_id:
        gone = task.state != TaskState.WAITING and process_alive(task.worker) is False
        return f"the process running it ({task.worker}) is gone" if gone else None
    try:
        job = Job.fetch(task.job_id, connection=connection)
    except NoSuchJobError:
        if task.state == TaskState.WAITING and timezone.now() - task.created < _ENQUEUE_SECONDS:
            return None  # its dispatcher may not have queued it yet (that comes after the commit)
        return "its RQ job is no longer in Redis"
    status = job.get_status(refresh=False)
    if status in _ENDED_JOB:
        return f"its RQ job ended ({status.value}) without finishing it"
    if status != JobStatus.STARTED:
        return None
    alive = process_alive(job.meta.get("process", ""))
    if alive is not None:
        return None if alive else f"its worker process ({job.meta['process']}) is gone"
    if job.worker_name and not beating(connection, job.worker_name):
        return f"its worker {job.worker_name} stopped sending heartbeats"
    return None


def _abandon(task_id: Any, cause: str) -> bool:
    """End the unfinished task because `cause` (canceled if it was being canceled, else failed), and
    remove its workspace; whether it was unfinished."""
    if _finish_cancel(task_id):
        return True
    if not end_task(task_id, TaskState.FAILED, error=f"{cause}; the sync was abandoned: sync again to finish it"):
        return False
    _end_shards(task_id)
    artifact_store().remove_workspaces(_workspace_prefix(task_id))
    log.warning("Task %s failed: %s", task_id, cause)
    return True


def _finish_cancel(task_id: Any) -> bool:
    """Mark the canceling task canceled and remove its workspace; whether it was canceling."""
    canceling = Task.objects.filter(pk=task_id, state=TaskState.CANCELING)
    if not canceling.update(state=TaskState.CANCELED, finished=timezone.now()):
        return False
    _end_shards(task_id)
    artifact_store().remove_workspaces(_workspace_prefix(task_id))
    log.info("Task %s canceled", task_id)
    return True


def _end_shards(task_id: Any) -> None:
    """End the board of the task's split sync, if it had one, when the task's own process cannot (it was
    killed, or stopped by RQ): its takers on other workers stop (board.abandon). Only an RQ task's
    sync has a board."""
    if not Task.objects.filter(pk=task_id).exclude(job_id="").exists():
        return
    try:
        abandon(Board(redis_connection(), str(task_id)))
    except RedisError as error:
        log.warning("Could not reach Redis at %s to end the shards of task %s: %s", redis_location(), task_id,
                    one_line(error))


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


def _workspace_prefix(task_id: Any) -> str:
    """The name of a task's workspace in the store, so that it can be found when the task is abandoned."""
    return f"task-{task_id}"
