"""A task's progress on its row, both ways: `TaskProgress` writes it as the sync goes (and is where a
running sync finds its task canceled: `TaskCanceled`); `ProgressFollower` reads it back into a waiter's
ProgressSink (`tasks.wait_for`, the CLI's bar)."""

from __future__ import annotations

from typing import Any

from pulp_sync import defaults
from pulp_sync.models import Task, TaskState
from pulp_sync.progress import ProgressSink, ShardProgress, Throttle

__all__ = ["TaskCanceled", "TaskProgress", "ProgressFollower"]


class TaskCanceled(Exception):
    """Raised inside a running task whose row says it is being canceled: the task stops there."""


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


class ProgressFollower:
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
