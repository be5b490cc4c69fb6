"""The commands that look after an installation as a whole: `migrate` and `reset` (the database and the
artifact store), `repositories` (what they hold) and `verify` (whether the two agree)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click
from rich.table import Table

from pulp_base.console import console
from pulp_sync import database
from pulp_sync.cli.shared import open_database
from pulp_sync.progress import progress_for

if TYPE_CHECKING:
    from pulp_sync.content.verify import Verification

__all__ = ["migrate", "reset", "repositories", "verify"]


@click.command()
def migrate() -> None:
    """Create or update the database schema."""
    database.migrate()
    click.echo(f"Database ready: {database.describe()}")


@click.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def reset(yes: bool) -> None:
    """Delete every repository and artifact: a fresh schema and an empty store (the seed's pclean)."""
    database.configure()
    if not yes:
        click.confirm(f"Delete all data in {database.describe()} and the artifact store?", abort=True)
    from pulp_sync.content.store import StoreError

    try:
        database.reset()
    except StoreError as error:
        raise click.ClickException(f"fresh schema in {database.describe()}, but {error}") from error
    click.echo(f"Reset: fresh schema in {database.describe()}, empty artifact store")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the repositories as one JSON array.")
def repositories(as_json: bool) -> None:
    """List repositories with their latest version and its number of content units."""
    open_database()
    from pulp_sync.models import Repository  # models exist only once Django is set up

    listed = []
    for repository in Repository.objects.order_by("name"):
        latest = repository.latest_version()
        listed.append({"name": repository.name, "version": None if latest is None else latest.number,
                       "content_units": 0 if latest is None else latest.content.count()})
    if as_json:
        click.echo(json.dumps(listed))
        return
    table = Table("repository", "version", "content units")
    for row in listed:
        version = "-" if row["version"] is None else str(row["version"])
        table.add_row(str(row["name"]), version, str(row["content_units"]))
    console().print(table)


@click.command()
@click.option("--repair", is_flag=True, help="Remove orphans and left-behind temp files; mark lost artifacts missing.")
@click.option("--json", "as_json", is_flag=True, help="Print what was found as one JSON object.")
def verify(repair: bool, as_json: bool) -> None:
    """Check that the artifact store and the database agree: every artifact's file there and intact,
    no file without a row, no temp file left behind, every version's content in the store.

    Exits with status 1 while anything is wrong (after --repair: while a version waits for a sync
    to fetch its missing artifacts again). Reading every artifact takes long on a big store: a bar on
    a terminal, a line every few seconds otherwise, shows how far it is.
    """
    open_database()
    from pulp_sync.content.store import artifact_store
    from pulp_sync.content.verify import verify_store

    found = verify_store(artifact_store(), repair, progress_for(console(stderr=True), "Checking"))
    if as_json:
        click.echo(json.dumps(found.as_dict()))
    else:
        _print_verification(found)
    if found.problems():
        raise click.ClickException(_still_wrong(found))


def _still_wrong(found: Verification) -> str:
    """The error line of a verify that found problems, and the one step that fixes them: --repair for what
    it repairs, else a sync of the versions' repositories (all a repair leaves, and all a plain verify finds
    once a repair has marked the lost artifacts missing)."""
    count = found.problems()
    waiting = count == len(found.incomplete_versions)
    if found.repaired:
        what = "problem remains" if count == 1 else "problems remain"
    else:
        what = "problem found" if count == 1 else "problems found"
    hint = "sync the repositories named above again" if waiting else "run `pulp-sync verify --repair`"
    return f"{count} {what}; {hint}"


def _print_verification(found: Verification) -> None:
    """What verify checked, a count per check with what repair does about it, and the versions to sync again."""
    click.echo(
        f"Checked {found.artifacts} artifacts ({found.bytes / 1e6:.1f} MB), {found.files} files "
        f"and {found.versions} repository versions"
    )
    table = Table("check", "found", "repair", box=None)
    for what, count, action in found.counts():
        table.add_row(what, str(count), action if count else "")
    console().print(table)
    for version in found.incomplete_versions:
        click.echo(f"incomplete: {version}")
    if not found.problems():
        click.echo("The store and the database agree.")
