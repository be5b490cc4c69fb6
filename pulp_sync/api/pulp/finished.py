"""Pulp tasks that run in the request asking for them (database rows and local files, no downloads):
an orphan cleanup, a content change, a version's repair. Each is recorded as a task that is finished
before the answer, which points to it as Pulp's does; it ends as every task does (tasks.end_task).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from pulp_base.process_names import this_process
from pulp_sync.messages import one_line
from pulp_sync.models import Repository, Task, TaskState
from pulp_sync.tasking.tasks import end_task

__all__ = ["finished_task"]


def finished_task(
    name: str,
    user: User,
    work: Callable[[], dict[str, Any]],
    expected: tuple[type[BaseException], ...],
    repository: Repository | None = None,
) -> Task:
    """Run `work` as a task named `name` dispatched by `user` (on `repository`), here and now: completed
    with the fields `work` returns (`report`, `created_version`; other keys go in the report), or failed
    saying why. An `expected` error fails the task with its message alone; any other also names its type
    and is raised again, for the server's log."""
    task = Task.objects.create(
        name=name, state=TaskState.RUNNING, started=timezone.now(), worker=this_process(), dispatched_by=user,
        repository=repository,
    )
    try:
        fields = work()
    except expected as error:
        end_task(task.pk, TaskState.FAILED, error=one_line(error))
    except Exception as error:
        end_task(task.pk, TaskState.FAILED, error=f"{type(error).__name__}: {one_line(error)}")
        raise
    else:
        created = fields.pop("created_version", None)
        report = fields.pop("report", fields)
        end_task(task.pk, TaskState.COMPLETED, report=report, created_version=created)
    task.refresh_from_db()
    return task
