"""pulp_sync.tasking.task_progress: a task's progress written to its row, throttled, and read back."""

from __future__ import annotations

from pathlib import Path

from pulp_sync.models import Task
from pulp_sync.tasking.task_progress import TaskProgress


def test_progress_is_written_at_most_once_an_interval(db: Path) -> None:
    task = Task.objects.create(name="sync")
    progress = TaskProgress(task.pk, interval=3600)
    progress.start(3, 300)
    for _ in range(3):
        progress.advance(1, 100)
    task.refresh_from_db()
    assert (task.artifacts_total, task.bytes_total, task.artifacts_done, task.bytes_done) == (3, 300, 0, 0)
    progress.finish()
    task.refresh_from_db()
    assert (task.artifacts_done, task.bytes_done) == (3, 300)
