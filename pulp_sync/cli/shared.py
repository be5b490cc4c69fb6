"""What several commands share: the database opened as every command opens it, a usage error and a Redis
failure as one `Error:` line, and a task as JSON (`sync --no-wait --json` and `tasks --json` print the same object).

The models (which exist only once Django is set up) and redis are imported inside the functions, so
that `pulp-sync --help` and the commands that need neither start without them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from pulp_sync import database
from pulp_sync.messages import one_line, redact

if TYPE_CHECKING:
    from pulp_sync.models import Task

__all__ = ["UsageProblem", "open_database", "redis_errors", "task_dict"]


class UsageProblem(click.ClickException):
    """What the user asked for cannot be done as given, found past click's own parsing (a remote's settings
    together): one `Error:` line without the usage text, and exit status 2, click's for usage errors."""

    exit_code = 2


def open_database() -> None:
    """Set Django up on the configured database and bring its schema up to date: what every command that
    reads or writes the database does first."""
    with _long_lived_objects():
        database.setup()
    database.ensure_schema()


@contextmanager
def _long_lived_objects() -> Iterator[None]:
    """Pause the garbage collector while Django loads, then freeze what it made: those objects live
    as long as the process, and scanning them again and again costs ~70 ms of every start-up."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


@contextmanager
def redis_errors() -> Iterator[None]:
    """A Redis failure as one `Error:` line; redis is imported only by the commands that use it."""
    from redis.exceptions import RedisError

    from pulp_sync.tasking.queues import redis_location

    try:
        yield
    except RedisError as error:
        hint = "is REDIS_URL right, and Redis up?"
        raise click.ClickException(f"Redis at {redis_location()}: {redact(one_line(error))}; {hint}") from error


def task_dict(task: Task) -> dict[str, Any]:
    """The task as JSON-ready values, names for its repository, remote and version."""

    def when(moment: Any) -> str | None:
        return moment.isoformat() if moment else None

    return {
        "id": str(task.pk),
        "name": task.name,
        "state": task.state,
        "repository": task.repository.name if task.repository else None,
        "remote": task.remote.name if task.remote else None,
        "created": when(task.created),
        "started": when(task.started),
        "finished": when(task.finished),
        "worker": task.worker,
        "error": task.error,
        "artifacts_total": task.artifacts_total,
        "artifacts_done": task.artifacts_done,
        "bytes_total": task.bytes_total,
        "bytes_done": task.bytes_done,
        "shards": task.shards,
        "created_version": task.created_version.number if task.created_version else None,
        "report": task.report,
        "job_id": task.job_id,
    }
