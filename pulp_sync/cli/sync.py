"""`pulp-sync sync`: the remote saved from the options given, then the repository synced from it, in this
process (ended cleanly by SIGTERM or Ctrl-C) or as an RQ task waited for or left queued.

The harness times this command in a child process per run, so what it imports at start-up counts: the
models, the sync and the tasks are imported inside the functions that use them.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

import click

from pulp_base.console import console
from pulp_base.download_processes import parse_processes
from pulp_base.manifest import MANIFEST_NAME
from pulp_sync.cli.downloaders import InstalledDownloader
from pulp_sync.cli.remote_options import refuse_password_in_url, remote_options, settings_from_options
from pulp_sync.cli.shared import open_database, redis_errors, task_dict
from pulp_sync.messages import one_line
from pulp_sync.progress import progress_for

if TYPE_CHECKING:
    from pulp_sync.models import Remote, Repository, Task
    from pulp_sync.sync.pipeline import SyncReport

__all__ = ["sync"]


class ProcessesType(click.ParamType):
    """--processes: a whole number from 1 up, or auto (pulp_base.download_processes: the API's and the specs' rule)."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            return parse_processes(value, "it")
        except ValueError as error:
            self.fail(str(error), param, ctx)


@click.command()
@click.argument("url")
@click.option("--repository", "repository_name", help="Repository to sync into [default: from the URL's path].")
@click.option("--remote", "remote_name", help="Remote to create or update [default: the repository's name].")
@click.option("--downloader", type=InstalledDownloader(),
              help="An installed downloader (`pulp-sync downloaders`) [default for a new remote: asyncio].")
@click.option(
    "--processes",
    "download_processes",
    type=ProcessesType(),
    help="Processes to split the downloads across: a number, or auto (one per usable CPU, none for a handful "
    "of files) [default for a new remote: 1]; never more than --concurrency, which they share, as they share "
    "--rate-limit. Saved on the remote.",
)
@remote_options
@click.option(
    "--manifest-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the manifest's lines from this local file instead of URL (e.g. a sample of them); "
    "the files are still fetched relative to URL. With --tasking rq the worker must be able to read it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option(
    "--tasking",
    type=click.Choice(["inline", "rq"]),
    default="inline",
    show_default=True,
    help="inline: sync in this process; rq: queue a task for `pulp-sync worker` on $REDIS_URL.",
)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="With --tasking rq: wait for the task and report as inline does, or print the task and return.",
)
def sync(
    url: str,
    repository_name: str | None,
    remote_name: str | None,
    downloader: str | None,
    download_processes: int | None,
    manifest_file: Path | None,
    as_json: bool,
    tasking: str,
    wait: bool,
    **options: Any,
) -> None:
    """Sync the repository from the PULP_MANIFEST at URL, inline or as an RQ task.

    Every setting of the remote has its option; options given are saved on the remote, options left
    out keep the remote's values. Secrets come from the environment or a file, never from the
    command line: --password-env VAR or --password-file PATH (the same for --proxy-password), and
    --client-key-file PATH.
    """
    if tasking == "inline" and not wait:
        raise click.UsageError("--no-wait needs --tasking rq")
    refuse_password_in_url(url, "URL")
    settings = {**settings_from_options(options), "downloader": downloader, "download_processes": download_processes}
    if settings.get("proxy_url"):
        refuse_password_in_url(settings["proxy_url"], "--proxy-url")
    open_database()
    from pulp_sync.models import Repository  # models exist only once Django is set up

    repository_name = repository_name or _name_from_url(url)
    remote = _save_remote(remote_name or repository_name, url, settings)
    repository, created = Repository.objects.get_or_create(name=repository_name)
    with _discarded_unless_synced(repository, created):
        if tasking == "inline":
            with _signals_end_the_sync(repository.name, created):
                _sync_inline(remote, repository, as_json, manifest_file)
        else:
            with redis_errors():
                _sync_task(remote, repository, as_json, wait, manifest_file)


@contextmanager
def _discarded_unless_synced(repository: Repository, created: bool) -> Iterator[None]:
    """A repository this command made is deleted again when the command ends (however it ends) with no version
    of it and no task naming it: a failed first inline sync leaves no empty repository behind. One synced as an
    RQ task stays with its task, failed or to run (discard_if_never_synced). Its remote stays: the settings
    given are saved whatever the sync does."""
    try:
        yield
    finally:
        if created:
            from django.db import DatabaseError

            from pulp_sync.sync.pipeline import discard_if_never_synced

            with suppress(DatabaseError):  # a database gone is what the command already reports, not a second error
                discard_if_never_synced(repository)


def _save_remote(name: str, url: str, settings: dict[str, Any]) -> Remote:
    """Create or update the remote; validated first, so a bad value is never saved. A change clears the
    secrets it would expose that it does not give again (Remote.safe_change), as in the API."""
    from django.db import IntegrityError

    from pulp_sync.models import Remote

    given = {field: value for field, value in settings.items() if value is not None}
    try:
        return _saved(Remote.objects.filter(name=name).first() or Remote(name=name), url, given)
    except IntegrityError:  # another command made it in the meantime (several first syncs at once): update it
        return _saved(Remote.objects.get(name=name), url, given)


def _saved(remote: Remote, url: str, given: dict[str, Any]) -> Remote:
    """The remote with the URL and settings given, validated, then saved in a transaction of its own."""
    from django.db import transaction

    for field, value in remote.safe_change({"url": url, **given}).items():
        setattr(remote, field, value)
    remote.full_clean(validate_unique=False)  # the database's unique index is the judge, race-free
    with transaction.atomic():
        remote.save()
    return remote


def _name_from_url(url: str) -> str:
    """`.../many-small/PULP_MANIFEST` -> `many-small`; `.../PULP_MANIFEST_100` -> `PULP_MANIFEST_100`."""
    parts = urlsplit(url)
    segments = [segment for segment in parts.path.split("/") if segment]
    if segments and segments[-1] == MANIFEST_NAME:
        segments.pop()
    return "-".join(segments) or parts.hostname or "repository"


class _Stopped(BaseException):
    """A signal asked an inline sync to end (a BaseException, as KeyboardInterrupt, so that no handler of
    errors takes it for a failure of the sync: it unwinds, and each `finally` on the way cleans up)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_end_the_sync(repository: str, created: bool) -> Iterator[None]:
    """SIGTERM (what systemd and container runtimes send) and SIGINT (Ctrl-C) end an inline sync cleanly:
    its workspace of partial downloads is removed on the way out, the repository keeps its version (one
    `created` for this sync is not kept: _discarded_unless_synced), the verified artifacts stay for the next
    sync; the exit status is 128 + the signal's number (143, 130)."""

    def stop(signum: int, _frame: object) -> None:
        raise _Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    except _Stopped as stopped:
        name = signal.Signals(stopped.signum).name
        kept = f"{repository!r}, made for this sync, is not kept" if created else f"{repository!r} keeps its version"
        click.echo(f"Error: stopped by {name}; {kept}, and the artifacts downloaded "
                   "so far are kept, so syncing again resumes", err=True)
        sys.exit(128 + stopped.signum)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _sync_inline(remote: Remote, repository: Repository, as_json: bool, manifest_file: Path | None) -> None:
    from pulp_sync.sync.pipeline import SyncError, sync_repository

    report: SyncReport | None
    try:
        progress = progress_for(console(stderr=True))
        report, error = sync_repository(remote, repository, progress, manifest_file=manifest_file), None
    except SyncError as failure:
        report, error = failure.report, one_line(failure)
    _print_outcome(report, error, as_json)


def _sync_task(remote: Remote, repository: Repository, as_json: bool, wait: bool, manifest_file: Path | None) -> None:
    """Queue the sync as an RQ task; then wait for it and print as inline does, or print the task."""
    from pulp_sync.models import TaskState
    from pulp_sync.sync.pipeline import SyncReport
    from pulp_sync.tasking.tasks import dispatch_sync, wait_for

    task = dispatch_sync(repository, remote, tasking="rq", manifest_file=manifest_file)
    if wait and not task.is_finished:
        try:  # from here on, Ctrl-C asks what to do with the queued task
            err = console(stderr=True)
            if err.is_terminal:
                err.print(f"Queued task {task.pk}; waiting for a `pulp-sync worker` to run it")
            task = wait_for(task, progress=progress_for(err))
        except KeyboardInterrupt:
            _interrupted_wait(task)
    if not task.is_finished:
        click.echo(json.dumps(task_dict(task)) if as_json else f"Queued task {task.pk}; `pulp-sync tasks` shows it")
        return
    report = SyncReport(**task.report) if task.report else None
    error = (task.error or "failed") if task.state == TaskState.FAILED else None
    if task.state == TaskState.CANCELED:
        error = f"task {task.pk} was canceled; the repository keeps its version"
    _print_outcome(report, error, as_json, _task_timing(task))


def _interrupted_wait(task: Task) -> NoReturn:
    """Ctrl-C while waiting for a task: ask whether to cancel it or leave it running (on a terminal; a
    script's interrupt leaves it running), say what became of it, and exit 130 as an interrupt does."""
    from pulp_sync.database import fresh_connections
    from pulp_sync.tasking.tasks import cancel_task

    with fresh_connections():  # the interrupt may have come in the middle of a query: start afresh
        if _asked_to_cancel(task):
            click.echo(f"Task {task.pk} is {cancel_task(task.pk).state}", err=True)
        else:
            click.echo(f"Task {task.pk} keeps running: `pulp-sync tasks` shows it, `pulp-sync tasks cancel "
                       f"{task.pk}` cancels it", err=True)
    sys.exit(128 + signal.SIGINT)


def _asked_to_cancel(task: Task) -> bool:
    """Whether the user at the terminal chose to cancel the task; never for a script (no terminal), nor at a
    second Ctrl-C or the end of input."""
    if not sys.stdin.isatty():
        return False
    try:
        return click.prompt(f"\nCancel task {task.pk}, or leave it running?", err=True,
                            type=click.Choice(["cancel", "leave"]), default="leave") == "cancel"
    except click.Abort:  # a second Ctrl-C, or the end of input
        return False


def _task_timing(task: Task) -> dict[str, float | None]:
    """Seconds from queueing to the end (what a client waits) and to the start (queue and worker start-up)."""
    def since_created(moment: Any) -> float | None:
        return None if moment is None else (moment - task.created).total_seconds()

    return {"task_seconds": since_created(task.finished), "queue_seconds": since_created(task.started)}


def _print_outcome(
    report: SyncReport | None, error: str | None, as_json: bool, timing: dict[str, float | None] | None = None
) -> None:
    """A sync's outcome: the report (one summary line, or JSON, with a task's `timing`); on error, with
    --json, one JSON object all the same (the report, if the sync got that far, and `error`), so that a
    script reading stdout always gets an object; then `Error:` on stderr."""
    if as_json and (report is not None or error is not None):
        fields = {**(report.as_dict() if report else {}), **(timing or {})}
        click.echo(json.dumps({**fields, "error": error} if error is not None else fields))
    elif error is None and report is not None:
        click.echo(report.summary())
    if error is not None:
        raise click.ClickException(error)
