"""The RQ job that takes shards of a split sync from its board (pulp_sync.sync.split.board), on any worker.

Queued by the task that splits its sync, one per shard but the first; a job that finds the board
canceled, gone or empty ends at once, so jobs left on the queue after their sync ended cost nothing.
"""

from __future__ import annotations

import logging
from functools import partial

from rq.job import get_current_job

from pulp_base.process_names import this_process
from pulp_sync.database import fresh_connections
from pulp_sync.models import Remote
from pulp_sync.sync.pipeline import download_shard
from pulp_sync.sync.split.board import Board, take_shards

__all__ = ["TAKE_SHARDS", "take_shards_job"]

log = logging.getLogger(__name__)

TAKE_SHARDS = f"{__name__}.take_shards_job"
"""The job, as RQ enqueues it by name (pulp_sync.sync.split.board.on_workers is handed it: this module needs that
one)."""


def take_shards_job(task_id: str) -> str:
    """Take shards of task `task_id`'s split sync until none waits; what it did, for RQ's record. It runs on
    fresh database connections, as a task's job does (database.fresh_connections). The board is on the
    Redis the job came from."""
    job = get_current_job()
    if job is None:
        raise RuntimeError("take_shards_job runs as an RQ job, on the Redis of its task's board")
    board = Board(job.connection, task_id)
    meta = board.meta()
    if not meta or board.canceled():
        return "the split sync had ended"
    with fresh_connections():
        remote = Remote.objects.get(pk=int(meta["remote"]))
        taker = job.worker_name or this_process()
        take_shards(board, partial(download_shard, remote, int(meta["count"])), taker, job.id)
    log.info("Took shards of task %s", task_id)
    return "took shards"
