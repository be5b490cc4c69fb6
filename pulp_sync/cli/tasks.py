"""The sync tasks queued on Redis: `tasks` lists them and `tasks cancel` cancels one; `worker` runs them."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

import click
from rich.table import Table

from pulp_base.console import console
from pulp_sync.cli.shared import open_database, redis_errors, task_dict
from pulp_sync.messages import one_line, redact

if TYPE_CHECKING:
    from pulp_sync.models import Task

__all__ = ["tasks", "worker"]


@click.command()
@click.option(
    "--worker-class",
    type=click.Choice(["fork", "simple"]),
    default="fork",
    show_default=True,
    help="fork: RQ's Worker, a work horse process per task; simple: RQ's SimpleWorker, tasks in its own process.",
)
@click.option("--burst", is_flag=True, help="Quit once the queue is empty.")
@click.option("--queue", help="The RQ queue to take tasks from [default: $PULP_SYNC_QUEUE, else this database's own].")
def worker(worker_class: str, burst: bool, queue: str | None) -> None:
    """Run the sync tasks queued on Redis ($REDIS_URL); first fail the tasks of workers that died."""
    open_database()
    from pulp_sync.tasking.worker import run_worker

    with redis_errors():
        run_worker(worker_class, queue, burst)


@click.group(invoke_without_command=True)
@click.option("--state", help="Only the tasks in this state: waiting, running, completed, failed, canceling or "
              "canceled.")
@click.option("--json", "as_json", is_flag=True, help="Print the tasks as one JSON array.")
@click.pass_context
def tasks(ctx: click.Context, state: str | None, as_json: bool) -> None:
    """List the tasks, newest first, with their progress; first fail the tasks of workers that died.
    `pulp-sync tasks cancel ID` cancels one."""
    if ctx.invoked_subcommand is not None:
        return
    open_database()
    from redis.exceptions import RedisError

    from pulp_sync.models import Task, TaskState
    from pulp_sync.tasking.queues import redis_location
    from pulp_sync.tasking.reaping import reap_abandoned_tasks

    if state is not None and state not in TaskState.values:
        raise click.BadParameter(f"{state!r} is not one of {', '.join(TaskState.values)}", param_hint="--state")
    try:
        reap_abandoned_tasks()
    except RedisError as error:
        where = redis_location()
        click.echo(f"Warning: could not look for dead workers on Redis at {where}: {redact(one_line(error))}", err=True)
    listed = Task.objects.select_related("repository", "remote", "created_version").order_by("-created")
    if state is not None:
        listed = listed.filter(state=state)
    if as_json:
        click.echo(json.dumps([task_dict(task) for task in listed]))
        return
    table = Table()
    for column in ("task", "repository", "state", "progress", "seconds", "worker", "error"):
        table.add_column(column, overflow="fold", no_wrap=column == "state")
    for task in listed:
        table.add_row(*_task_row(task))
    console().print(table)


@tasks.command("cancel")
@click.argument("task_id", type=click.UUID)
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Wait until a running task's worker has stopped it.")
def cancel(task_id: uuid.UUID, wait: bool) -> None:
    """Cancel a waiting task at once, or a running one (its worker stops it, removing its partial
    downloads; the repository keeps its version). A finished task cannot be canceled (exit 1)."""
    open_database()
    from pulp_sync.models import Task, TaskState
    from pulp_sync.tasking.tasks import cancel_task, wait_for

    task = Task.objects.filter(pk=task_id).first()
    if task is None:
        raise click.ClickException(f"no task {task_id}; `pulp-sync tasks` lists them")
    if task.is_finished:
        raise click.ClickException(f"task {task_id} is {task.state} and cannot be canceled")
    task = cancel_task(task_id)
    if task.state == TaskState.CANCELING and wait:
        task = wait_for(task)
    if task.state not in (TaskState.CANCELING, TaskState.CANCELED):
        raise click.ClickException(f"task {task_id} ended {task.state} before it could be canceled")
    click.echo(f"{'Canceled' if task.state == TaskState.CANCELED else 'Canceling'} task {task_id}")


def _task_row(task: Task) -> list[str]:
    """The task for people: id, repository, state, progress, seconds it ran, worker, error."""
    progress = f"{task.artifacts_done}/{task.artifacts_total}, {task.bytes_done / 1e6:.1f} MB"
    took = f"{(task.finished - task.started).total_seconds():.1f}" if task.finished and task.started else "-"
    repository = task.repository.name if task.repository else "-"
    return [str(task.pk), repository, task.state, progress, took, task.worker, task.error]
