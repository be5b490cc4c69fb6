"""How a task ends: `end_task` (completed or failed), `finish_cancel` (canceled) and `abandon_task` (its
process is gone), the last two removing its workspace and stopping its split sync's takers.

Apart from dispatching and running (tasks.py) because everything that ends a task needs it: the task's
own sync, the reaper (reaping.py), RQ's callbacks (callbacks.py) and the API's tasks finished in the
request (api/pulp/finished.py, through tasks.end_task). Each of them imports this module, and it imports
none of them, so no two of them import each other.
"""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone
from redis.exceptions import RedisError

from pulp_sync.content.store import artifact_store
from pulp_sync.messages import one_line
from pulp_sync.models import UNFINISHED_TASK_STATES, Task, TaskState
from pulp_sync.sync.split.board import Board, abandon
from pulp_sync.tasking.queues import redis_connection, redis_location

__all__ = ["end_task", "finish_cancel", "abandon_task", "workspace_prefix"]

log = logging.getLogger(__name__)


def end_task(task_id: Any, state: TaskState, **fields: Any) -> bool:
    """Finish the task in `state`, with `fields` (its error, or its report and the version it made),
    unless it has finished already; whether this call finished it.

    The one way a task ends other than canceled: a sync, its RQ callbacks and reapers, and the API's
    tasks finished in the request (api/pulp/finished.py). One conditional update, so that a task ended
    meanwhile by another process (a reaper, a cancel) keeps the end it was given first."""
    unfinished = Task.objects.filter(pk=task_id, state__in=UNFINISHED_TASK_STATES)
    return unfinished.update(state=state, finished=timezone.now(), **fields) == 1


def abandon_task(task_id: Any, cause: str) -> bool:
    """End the unfinished task because `cause` (canceled if it was being canceled, else failed), and
    remove its workspace; whether it was unfinished."""
    if finish_cancel(task_id):
        return True
    if not end_task(task_id, TaskState.FAILED, error=f"{cause}; the sync was abandoned: sync again to finish it"):
        return False
    _discard_work(task_id)
    log.warning("Task %s failed: %s", task_id, cause)
    return True


def finish_cancel(task_id: Any) -> bool:
    """Mark the canceling task canceled and remove its workspace; whether it was canceling."""
    canceling = Task.objects.filter(pk=task_id, state=TaskState.CANCELING)
    if not canceling.update(state=TaskState.CANCELED, finished=timezone.now()):
        return False
    _discard_work(task_id)
    log.info("Task %s canceled", task_id)
    return True


def workspace_prefix(task_id: Any) -> str:
    """The name of a task's workspace in the store, so that it can be found when the task is abandoned."""
    return f"task-{task_id}"


def _discard_work(task_id: Any) -> None:
    """What a task ended by someone else leaves behind: its split sync's takers and its workspace."""
    _end_shards(task_id)
    artifact_store().remove_workspaces(workspace_prefix(task_id))


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
