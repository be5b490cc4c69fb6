"""The `pulp-sync` command line: migrate, reset, downloaders, sync, repositories, verify, worker, tasks,
api, createuser, `fixtures` and `bench`.

Errors a user can fix (a failed sync, a bad setting, an unreachable database) are one line on
stderr, `Error: ...`, and exit status 1, never a traceback.
"""

from __future__ import annotations

import gc
import json
import signal
import sys
import uuid
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, NoReturn
from urllib.parse import urlsplit

import click
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import DatabaseError
from rich.console import Console
from rich.table import Table

from downloaders import available
from pulp_sync import database, defaults
from pulp_sync.errors import ConfigurationError
from pulp_sync.messages import one_line, redact
from pulp_sync.progress import progress_for
from pulp_sync.remote_options import refuse_password_in_url, remote_options, settings_from_options

if TYPE_CHECKING:
    from pulp_sync.models import Remote, Repository, Task
    from pulp_sync.sync import SyncReport
    from pulp_sync.verify import Verification

__all__ = ["cli", "main"]


MOUNTED_COMMANDS = "pulp_sync.commands"
"""The entry-point group of command groups other packages mount on `pulp-sync` (`bench` from the harness,
`fixtures`, `plugin` from the conformance suite, in setup.py): the service names none of them, so it
imports none of them, and each is loaded only when named: the fixture server and the harness pull in
aiohttp's server, scipy and matplotlib, which would add their start-up time to every sync the harness times."""


def _mounted() -> dict[str, metadata.EntryPoint]:
    return {entry.name: entry for entry in metadata.entry_points(group=MOUNTED_COMMANDS)}


class _Cli(click.Group):
    """Turns the errors of any command into one `Error:` line and exit status 1."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *_mounted()])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        mounted = _mounted()
        if name in mounted:
            command: click.Command = mounted[name].load()
            return command
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ValidationError as error:
            raise click.ClickException(_validation_message(error)) from error
        except ConfigurationError as error:
            raise click.ClickException(str(error)) from error
        except DatabaseError as error:
            raise click.ClickException(database.explain(error)) from error


@click.group(cls=_Cli)
@click.version_option(package_name="pulp-sync")
def cli() -> None:
    """Sync PULP_MANIFEST repositories with pluggable downloaders.

    State lives under $PULP_SYNC_HOME (default ./.pulp-sync); DATABASE_URL chooses another database.
    """


@cli.command()
def migrate() -> None:
    """Create or update the database schema."""
    database.migrate()
    click.echo(f"Database ready: {database.describe()}")


@cli.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def reset(yes: bool) -> None:
    """Delete every repository and artifact: a fresh schema and an empty store (the seed's pclean)."""
    database.configure()
    if not yes:
        click.confirm(f"Delete all data in {database.describe()} and the artifact store?", abort=True)
    from pulp_sync.store import StoreError

    try:
        database.reset()
    except StoreError as error:
        raise click.ClickException(f"fresh schema in {database.describe()}, but {error}") from error
    click.echo(f"Reset: fresh schema in {database.describe()}, empty artifact store")


@cli.command("downloaders")
def list_downloaders() -> None:
    """List the installed downloaders (entry points in `pulp_sync.downloaders`) and where they come from."""
    installed = available()
    if not installed:
        raise click.ClickException("no downloaders installed; install pulp-sync (`pip install -e .`)")
    for name, target in installed.items():
        click.echo(f"{name}\t{target}")


@cli.command()
@click.argument("url")
@click.option("--repository", "repository_name", help="Repository to sync into [default: from the URL's path].")
@click.option("--remote", "remote_name", help="Remote to create or update [default: the repository's name].")
@click.option("--downloader", help="Downloader to use [default for a new remote: asyncio].")
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
    settings = {**settings_from_options(options), "downloader": downloader}
    if settings.get("proxy_url"):
        refuse_password_in_url(settings["proxy_url"], "--proxy-url")
    _open_database()
    from pulp_sync.models import Repository  # models exist only once Django is set up

    repository_name = repository_name or _name_from_url(url)
    remote = _save_remote(remote_name or repository_name, url, settings)
    repository, _ = Repository.objects.get_or_create(name=repository_name)
    if tasking == "inline":
        with _signals_end_the_sync(repository.name):
            _sync_inline(remote, repository, as_json, manifest_file)
    else:
        with _redis_errors():
            _sync_task(remote, repository, as_json, wait, manifest_file)


@cli.command()
def repositories() -> None:
    """List repositories with their latest version and its number of content units."""
    _open_database()
    from pulp_sync.models import Repository  # models exist only once Django is set up

    table = Table("repository", "version", "content units")
    for repository in Repository.objects.order_by("name"):
        latest = repository.latest_version()
        if latest is None:
            table.add_row(repository.name, "-", "0")
        else:
            table.add_row(repository.name, str(latest.number), str(latest.content.count()))
    Console().print(table)


@cli.command()
@click.option("--repair", is_flag=True, help="Remove orphans and left-behind temp files; mark lost artifacts missing.")
@click.option("--json", "as_json", is_flag=True, help="Print what was found as one JSON object.")
def verify(repair: bool, as_json: bool) -> None:
    """Check that the artifact store and the database agree: every artifact's file there and intact,
    no file without a row, no temp file left behind, every version's content in the store.

    Exits with status 1 while anything is wrong (after --repair: while a version waits for a sync
    to fetch its missing artifacts again).
    """
    _open_database()
    from pulp_sync.store import artifact_store
    from pulp_sync.verify import verify_store

    found = verify_store(artifact_store(), repair)
    if as_json:
        click.echo(json.dumps(found.as_dict()))
    else:
        _print_verification(found)
    if found.problems():
        what = "problem remains" if repair else "problem(s) found"
        hint = "sync the repositories named above again" if repair else "run `pulp-sync verify --repair`"
        raise click.ClickException(f"{found.problems()} {what}; {hint}")


@cli.command()
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
    _open_database()
    from pulp_sync.worker import run_worker

    with _redis_errors():
        run_worker(worker_class, queue, burst)


@cli.group(invoke_without_command=True)
@click.option("--state", help="Only the tasks in this state: waiting, running, completed, failed, canceling or "
              "canceled.")
@click.option("--json", "as_json", is_flag=True, help="Print the tasks as one JSON array.")
@click.pass_context
def tasks(ctx: click.Context, state: str | None, as_json: bool) -> None:
    """List the tasks, newest first, with their progress; first fail the tasks of workers that died.
    `pulp-sync tasks cancel ID` cancels one."""
    if ctx.invoked_subcommand is not None:
        return
    _open_database()
    from redis.exceptions import RedisError

    from pulp_sync.models import Task, TaskState
    from pulp_sync.tasks import reap_abandoned_tasks, redis_location

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
        click.echo(json.dumps([_task_dict(task) for task in listed]))
        return
    table = Table()
    for column in ("task", "repository", "state", "progress", "seconds", "worker", "error"):
        table.add_column(column, overflow="fold", no_wrap=column == "state")
    for task in listed:
        table.add_row(*_task_row(task))
    Console().print(table)


@cli.command()
@click.option("--bind", default=defaults.API_BIND, show_default=True, help="host:port to listen on (Pulp's port by "
              "default); port 0 picks one.")
@click.option("--workers", type=click.IntRange(min=1), default=defaults.API_WORKERS, show_default=True,
              help="gunicorn worker processes.")
@click.option("--threads", type=click.IntRange(min=1), default=defaults.API_THREADS, show_default=True,
              help="Request threads per worker.")
def api(bind: str, workers: int, threads: int) -> None:
    """Serve the REST API with gunicorn: Pulp 3's under /pulp/api/v3/ (pulp-cli works with it), the deprecated
    pulp-sync one under /api/v3/. The syncs it starts run on `pulp-sync worker`."""
    _open_database()
    from django.db import connections

    from pulp_sync.api.server import serve

    connections.close_all()  # gunicorn forks its workers: each must open its own connection
    serve(bind, workers, threads)


@cli.command()
@click.argument("name")
@click.option("--password", envvar="PULP_SYNC_PASSWORD", help="[default: asked unless --token]")
@click.option("--token", is_flag=True, help="Print the user's API token (made on first use) on stdout.")
@click.option("--admin/--no-admin", default=None,
              help="Make the user an admin, who sees and changes every user's objects (or no longer one) "
              "[default: a new user is none, an existing one keeps what it is].")
def createuser(name: str, password: str | None, token: bool, admin: bool | None) -> None:
    """Create an API user, or set an existing one's password; with --token, print its token.

    The password may come from $PULP_SYNC_PASSWORD, out of sight of `ps`. A user made with --token
    and no password can use the API with its token only. Users see only what they created or were
    given a role on; admins see everything (docs/api.md).
    """
    if password is None and not token:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    if password == "":
        raise click.BadParameter("must not be empty", param_hint="--password")
    _open_database()
    from pulp_sync.api.auth import save_user, token_for

    user, created = save_user(name, password, admin)
    kind = "admin" if user.is_superuser else "user"
    click.echo(f"{'Created' if created else 'Updated'} {kind} {name}", err=True)
    if token:
        click.echo(token_for(user))


def main() -> None:
    """The `pulp-sync` console script.

    Every object is frozen out of the garbage collector before the interpreter exits: its last
    full collection would scan them all (~0.12 s after a sync) only to free them anyway.
    """
    try:
        cli(prog_name="pulp-sync")
    finally:
        gc.freeze()


def _open_database() -> None:
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
    if segments and segments[-1] == "PULP_MANIFEST":
        segments.pop()
    return "-".join(segments) or parts.hostname or "repository"


class _Stopped(BaseException):
    """A signal asked an inline sync to end (a BaseException, as KeyboardInterrupt, so that no handler of
    errors takes it for a failure of the sync: it unwinds, and each `finally` on the way cleans up)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_end_the_sync(repository: str) -> Iterator[None]:
    """SIGTERM (what systemd and container runtimes send) and SIGINT (Ctrl-C) end an inline sync cleanly:
    its workspace of partial downloads is removed on the way out, the repository keeps its version, the
    verified artifacts stay for the next sync; the exit status is 128 + the signal's number (143, 130)."""

    def stop(signum: int, _frame: object) -> None:
        raise _Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    except _Stopped as stopped:
        name = signal.Signals(stopped.signum).name
        click.echo(f"Error: stopped by {name}; {repository!r} keeps its version, and the artifacts downloaded "
                   "so far are kept, so syncing again resumes", err=True)
        sys.exit(128 + stopped.signum)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _sync_inline(remote: Remote, repository: Repository, as_json: bool, manifest_file: Path | None) -> None:
    from pulp_sync.sync import SyncError, sync_repository

    try:
        progress = progress_for(Console(stderr=True))
        report, error = sync_repository(remote, repository, progress, manifest_file=manifest_file), None
    except SyncError as failure:
        report, error = failure.report, one_line(failure)
    _print_outcome(report, error, as_json)


def _sync_task(remote: Remote, repository: Repository, as_json: bool, wait: bool, manifest_file: Path | None) -> None:
    """Queue the sync as an RQ task; then wait for it and print as inline does, or print the task."""
    from pulp_sync.models import TaskState
    from pulp_sync.sync import SyncReport
    from pulp_sync.tasks import dispatch_sync, wait_for

    task = dispatch_sync(repository, remote, tasking="rq", manifest_file=manifest_file)
    if wait and not task.is_finished:
        try:  # from here on, Ctrl-C asks what to do with the queued task
            console = Console(stderr=True)
            if console.is_terminal:
                console.print(f"Queued task {task.pk}; waiting for a `pulp-sync worker` to run it")
            task = wait_for(task, progress=progress_for(console))
        except KeyboardInterrupt:
            _interrupted_wait(task)
    if not task.is_finished:
        click.echo(json.dumps(_task_dict(task)) if as_json else f"Queued task {task.pk}; `pulp-sync tasks` shows it")
        return
    report = SyncReport(**task.report) if task.report else None
    error = (task.error or "failed") if task.state == TaskState.FAILED else None
    if task.state == TaskState.CANCELED:
        error = f"task {task.pk} was canceled; the repository keeps its version"
    _print_outcome(report, error, as_json, _task_timing(task))


def _interrupted_wait(task: Task) -> NoReturn:
    """Ctrl-C while waiting for a task: ask whether to cancel it or leave it running (on a terminal; a
    script's interrupt leaves it running), say what became of it, and exit 130 as an interrupt does."""
    from django.db import connections

    from pulp_sync.tasks import cancel_task

    connections.close_all()  # the interrupt may have come in the middle of a query: start afresh
    choice = "leave"
    if sys.stdin.isatty():
        try:
            choice = click.prompt(f"\nCancel task {task.pk}, or leave it running?", err=True,
                                  type=click.Choice(["cancel", "leave"]), default="leave")
        except click.Abort:  # a second Ctrl-C, or the end of input
            choice = "leave"
    if choice == "cancel":
        state = cancel_task(task.pk).state
        click.echo(f"Task {task.pk} is {state}", err=True)
    else:
        click.echo(f"Task {task.pk} keeps running: `pulp-sync tasks` shows it, `pulp-sync tasks cancel "
                   f"{task.pk}` cancels it", err=True)
    sys.exit(128 + signal.SIGINT)


def _task_timing(task: Task) -> dict[str, float | None]:
    """Seconds from queueing to the end (what a client waits) and to the start (queue and worker start-up)."""
    def since_created(moment: Any) -> float | None:
        return None if moment is None else (moment - task.created).total_seconds()

    return {"task_seconds": since_created(task.finished), "queue_seconds": since_created(task.started)}


def _print_outcome(
    report: SyncReport | None, error: str | None, as_json: bool, timing: dict[str, float | None] | None = None
) -> None:
    """A sync's outcome: the report (one summary line, or JSON, with a task's `timing`); on error the JSON
    report if any, then `Error:`."""
    if as_json and report is not None:
        click.echo(json.dumps({**report.as_dict(), **(timing or {})}))
    elif error is None and report is not None:
        click.echo(report.summary())
    if error is not None:
        raise click.ClickException(error)


@contextmanager
def _redis_errors() -> Iterator[None]:
    """A Redis failure as one `Error:` line; redis is imported only by the commands that use it."""
    from redis.exceptions import RedisError

    from pulp_sync.tasks import redis_location

    try:
        yield
    except RedisError as error:
        hint = "is REDIS_URL right, and Redis up?"
        raise click.ClickException(f"Redis at {redis_location()}: {redact(one_line(error))}; {hint}") from error


def _print_verification(found: Verification) -> None:
    """What verify checked, a count per check with what repair does about it, and the versions to sync again."""
    click.echo(
        f"Checked {found.artifacts} artifacts ({found.bytes / 1e6:.1f} MB), {found.files} files "
        f"and {found.versions} repository versions"
    )
    table = Table("check", "found", "repair", box=None)
    for what, count, action in found.counts():
        table.add_row(what, str(count), action if count else "")
    Console().print(table)
    for version in found.incomplete_versions:
        click.echo(f"incomplete: {version}")
    if not found.problems():
        click.echo("The store and the database agree.")


@tasks.command("cancel")
@click.argument("task_id", type=click.UUID)
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Wait until a running task's worker has stopped it.")
def cancel(task_id: uuid.UUID, wait: bool) -> None:
    """Cancel a waiting task at once, or a running one (its worker stops it, removing its partial
    downloads; the repository keeps its version). A finished task cannot be canceled (exit 1)."""
    _open_database()
    from pulp_sync.models import Task, TaskState
    from pulp_sync.tasks import cancel_task, wait_for

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


def _task_dict(task: Task) -> dict[str, Any]:
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
        "created_version": task.created_version.number if task.created_version else None,
        "report": task.report,
        "job_id": task.job_id,
    }


def _validation_message(error: ValidationError) -> str:
    if not hasattr(error, "error_dict"):
        return "; ".join(error.messages)
    return "; ".join(
        message if field == NON_FIELD_ERRORS else f"{field}: {message}"
        for field, messages in error.message_dict.items()
        for message in messages
    )
