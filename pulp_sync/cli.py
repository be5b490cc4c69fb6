"""The `pulp-sync` command line: migrate, reset, downloaders, sync, repositories, `fixtures` and `bench`.

Errors a user can fix (a failed sync, a bad setting, an unreachable database) are one line on
stderr, `Error: ...`, and exit status 1, never a traceback.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import DatabaseError
from rich.console import Console
from rich.table import Table

from downloaders import available
from fixtures.cli import fixtures_group
from harness.cli import bench_group
from pulp_sync import database
from pulp_sync.progress import progress_for

if TYPE_CHECKING:
    from pulp_sync.models import Remote

__all__ = ["cli", "main"]


class _Cli(click.Group):
    """Turns the errors of any command into one `Error:` line and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ValidationError as error:
            raise click.ClickException(_validation_message(error)) from error
        except DatabaseError as error:
            hint = "is DATABASE_URL right, and the server up?"
            raise click.ClickException(f"database error: {_one_line(error)}; {hint}") from error


@click.group(cls=_Cli)
@click.version_option(package_name="pulp-sync")
def cli() -> None:
    """Sync PULP_MANIFEST repositories with pluggable downloaders.

    State lives under $PULP_SYNC_HOME (default ./.pulp-sync); DATABASE_URL chooses another database.
    """


@cli.command()
def migrate() -> None:
    """Create or update the database schema."""
    _open_database()
    click.echo(f"Database ready: {database.describe()}")


@cli.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def reset(yes: bool) -> None:
    """Delete every repository and artifact: a fresh schema and an empty store (the seed's pclean)."""
    database.setup()
    if not yes:
        click.confirm(f"Delete all data in {database.describe()} and the artifact store?", abort=True)
    database.reset()
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
@click.option("--concurrency", "download_concurrency", type=click.IntRange(min=1), help="Downloads in flight.")
@click.option("--max-retries", type=click.IntRange(min=0), help="Retries after the first attempt.")
@click.option("--sock-read-timeout", type=float, help="Seconds a read may wait for data.")
@click.option("--total-timeout", type=float, help="Seconds one download attempt may take in all.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def sync(url: str, repository_name: str | None, remote_name: str | None, as_json: bool, **settings: Any) -> None:
    """Sync the repository from the PULP_MANIFEST at URL, inline.

    Options given are saved on the remote; options left out keep the remote's values.
    """
    _open_database()
    from pulp_sync.models import Repository  # models exist only once Django is set up
    from pulp_sync.sync import SyncError, sync_repository

    repository_name = repository_name or _name_from_url(url)
    remote = _save_remote(remote_name or repository_name, url, settings)
    repository, _ = Repository.objects.get_or_create(name=repository_name)
    try:
        report = sync_repository(remote, repository, progress_for(Console(stderr=True)))
    except SyncError as error:
        if as_json and error.report is not None:
            click.echo(json.dumps(error.report.as_dict()))
        raise click.ClickException(_one_line(error)) from error
    click.echo(json.dumps(report.as_dict()) if as_json else report.summary())


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


cli.add_command(fixtures_group, "fixtures")
cli.add_command(bench_group, "bench")


def main() -> None:
    """The `pulp-sync` console script."""
    cli(prog_name="pulp-sync")


def _open_database() -> None:
    database.setup()
    database.migrate()


def _save_remote(name: str, url: str, settings: dict[str, Any]) -> Remote:
    """Create or update the remote; validated first, so a bad value is never saved."""
    from pulp_sync.models import Remote

    remote = Remote.objects.filter(name=name).first() or Remote(name=name)
    remote.url = url
    for field, value in settings.items():
        if value is not None:
            setattr(remote, field, value)
    remote.full_clean()
    remote.save()
    return remote


def _name_from_url(url: str) -> str:
    """`.../many-small/PULP_MANIFEST` -> `many-small`; `.../PULP_MANIFEST_100` -> `PULP_MANIFEST_100`."""
    parts = urlsplit(url)
    segments = [segment for segment in parts.path.split("/") if segment]
    if segments and segments[-1] == "PULP_MANIFEST":
        segments.pop()
    return "-".join(segments) or parts.hostname or "repository"


def _one_line(error: Exception) -> str:
    """The error's message with its line breaks (a database driver's, say) folded into spaces."""
    return " ".join(str(error).split())


def _validation_message(error: ValidationError) -> str:
    if not hasattr(error, "error_dict"):
        return "; ".join(error.messages)
    return "; ".join(
        message if field == NON_FIELD_ERRORS else f"{field}: {message}"
        for field, messages in error.message_dict.items()
        for message in messages
    )
