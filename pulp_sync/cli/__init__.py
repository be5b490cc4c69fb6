"""The `pulp-sync` command line: migrate, reset, downloaders, sync, repositories, verify, worker, tasks,
api, createuser, deleteuser, settings, `fixtures` and `bench`.

Errors a user can fix are one line on stderr, `Error: ...`, never a traceback. The exit status says
which kind: 2 for a usage error, what was asked for on the command line (a bad option or argument, as
click refuses it, or values the remote they make refuses: `remote 'x': ...`); 1 for the rest (a failed
sync, an environment variable pulp-sync cannot use, an unreachable database).

Here is the group with that error handling and the commands other packages mount on it; each
command is in the module of its concern:

    admin.py        migrate, reset, repositories, verify: the database and the artifact store
    downloaders.py  downloaders: the installed downloader plugins
    sync.py         sync: the remote saved from the options, the repository synced from it
    tasks.py        tasks, tasks cancel, worker: the RQ tasks and what runs them
    server.py       api, createuser, deleteuser: the REST API and its users
    environment.py  settings: the environment variables the service reads, as it reads them
    shared.py       what several commands share: the database opened, Redis errors, a task as JSON

The models and the heavy modules are imported inside the commands, so that `pulp-sync --help` and a
sync child start fast.
"""

from __future__ import annotations

import gc
from importlib import metadata
from typing import Any

import click
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import DatabaseError

from pulp_sync import database
from pulp_sync.cli import admin, downloaders, environment, server, sync, tasks
from pulp_sync.cli.shared import UsageProblem
from pulp_sync.errors import ConfigurationError

__all__ = ["cli", "main"]


MOUNTED_COMMANDS = "pulp_sync.commands"
"""The entry-point group of command groups other packages mount on `pulp-sync` (`bench` from the harness,
`fixtures`, `plugin` from the conformance suite, in setup.py): the service names none of them, so it
imports none of them, and each is loaded only when named: the fixture server and the harness pull in
aiohttp's server, scipy and matplotlib, which would add their start-up time to every sync the harness times."""


def _mounted() -> dict[str, metadata.EntryPoint]:
    return {entry.name: entry for entry in metadata.entry_points(group=MOUNTED_COMMANDS)}


class _Cli(click.Group):
    """Turns the errors of any command into one `Error:` line: exit status 2 for values the user gave that a
    model refuses (Django's ValidationError: a remote's settings, a user's name), 1 for the rest."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *_mounted()])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """The service's own command, else a mounted one: the entry points are scanned (some 6 ms) only
        for a name the service does not have, never on the way to a sync."""
        own = super().get_command(ctx, name)
        if own is not None:
            return own
        mounted = _mounted().get(name)
        command: click.Command | None = None if mounted is None else mounted.load()
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ValidationError as error:
            raise UsageProblem(_validation_message(error)) from error
        except ConfigurationError as error:
            raise click.ClickException(str(error)) from error
        except DatabaseError as error:
            raise click.ClickException(database.explain(error)) from error


@click.group(
    cls=_Cli,
    context_settings={"help_option_names": ["-h", "--help"]},  # mounted commands inherit it
    commands=[
        admin.migrate,
        admin.reset,
        downloaders.list_downloaders,
        sync.sync,
        admin.repositories,
        admin.verify,
        tasks.worker,
        tasks.tasks,
        server.api,
        server.createuser,
        server.deleteuser,
        environment.settings,
    ],
)
@click.version_option(package_name="pulp-sync")
def cli() -> None:
    """Sync PULP_MANIFEST repositories with pluggable downloaders.

    State lives under $PULP_SYNC_HOME (default ./.pulp-sync); DATABASE_URL chooses another database.
    """


def main() -> None:
    """The `pulp-sync` console script.

    Every object is frozen out of the garbage collector before the interpreter exits: its last
    full collection would scan them all (~0.12 s after a sync) only to free them anyway.
    """
    try:
        cli(prog_name="pulp-sync")
    finally:
        gc.freeze()


def _validation_message(error: ValidationError) -> str:
    if not hasattr(error, "error_dict"):
        return "; ".join(error.messages)
    return "; ".join(
        message if field == NON_FIELD_ERRORS else f"{field}: {message}"
        for field, messages in error.message_dict.items()
        for message in messages
    )
