"""The reaper: unfinished tasks whose process is gone (SIGKILL, the OOM killer, a lost machine), which
cannot end themselves, are ended failed and their workspaces removed (ending.abandon_task).

`reap_abandoned_tasks` runs when every worker starts and every PULP_SYNC_WORKER_TTL (worker._Heartbeat), and
each time `pulp-sync tasks` runs; `reap` runs on the one task `tasks.wait_for` waits for. A task's process
on this host is checked by its pid, one elsewhere through Redis: its job gone or ended, or its worker's
heartbeat (`queues.still_alive`) lapsed.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from redis import Redis
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from pulp_base.process_names import process_alive
from pulp_sync.models import UNFINISHED_TASK_STATES, Task, TaskState
from pulp_sync.tasking.ending import abandon_task
from pulp_sync.tasking.queues import beating, redis_connection

__all__ = ["reap_abandoned_tasks", "reap"]

_ENQUEUE_SECONDS = timedelta(seconds=60)
"""How long a waiting task's job may be missing from Redis before the task counts as abandoned: its row
is committed first and its job queued just after, so a reaper in another process can look in between."""
_ENDED_JOB = (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED)


def reap_abandoned_tasks(connection: Redis | None = None) -> list[str]:
    """Mark failed every unfinished task whose process is gone, and remove its workspace; their ids.

    Raises RedisError if an RQ task needs a look at Redis and Redis cannot be reached.
    """
    connection = connection or redis_connection()
    unfinished = Task.objects.filter(state__in=UNFINISHED_TASK_STATES).only("pk", "state", "worker", "job_id",
                                                                            "created")
    return [str(task.pk) for task in unfinished if reap(task, connection)]


def reap(task: Task, connection: Redis) -> bool:
    """Fail the unfinished task if its process is gone; whether it did."""
    cause = _why_abandoned(task, connection)
    return cause is not None and abandon_task(task.pk, cause)


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
