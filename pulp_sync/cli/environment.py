"""`pulp-sync settings`: the environment variables the service reads, as this process reads them.

An operator who sets PULP_SYNC_* for a worker or the API sees here what the service will use: each
variable's value after conversion (PULP_SYNC_HOME resolved, seconds as numbers), whether it was set or
is the default, with the secret key and URLs' passwords hidden. A value the service cannot use is the
same one-line error that every other command gives. docs/settings.md describes each variable.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.table import Table

from pulp_base.console import console
from pulp_sync import environment

__all__ = ["settings"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the settings as one JSON array.")
def settings(as_json: bool) -> None:
    """Show the environment variables the service reads: each one's value as read, and whether it is set
    or the default (docs/settings.md describes them)."""
    rows = _rows(environment.read())
    if as_json:
        click.echo(json.dumps(rows))
        return
    table = Table("variable", "value", "from")
    for row in rows:
        table.add_row(row["variable"], row["value"] or "", "environment" if row["set"] else "default")
    console().print(table)


def _rows(read: environment.Environment) -> list[dict[str, Any]]:
    """One row per variable, in the order of the typed list."""
    given = read.model_fields_set
    return [
        {"variable": environment.variable(name), "value": _value(name, getattr(read, name)), "set": name in given}
        for name in environment.Environment.model_fields
    ]


def _value(name: str, value: Any) -> str | None:
    """What the table and the JSON show: None for a variable with no value (DATABASE_URL unset: sqlite)."""
    return None if value is None else environment.shown(name, value)
