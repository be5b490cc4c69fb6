"""`pulp-sync downloaders`: which downloader plugins are installed, read from their entry points without
importing them (docs/plugins.md); and `--downloader`'s choice among them."""

from __future__ import annotations

import difflib
import json
from typing import Any

import click

from downloaders import available

__all__ = ["InstalledDownloader", "list_downloaders"]


@click.command("downloaders")
@click.option("--json", "as_json", is_flag=True, help="Print the downloaders as one JSON array.")
def list_downloaders(as_json: bool) -> None:
    """List the installed downloaders (entry points in `pulp_sync.downloaders`) and where they come from."""
    installed = available()
    if not installed:
        raise click.ClickException("no downloaders installed; install pulp-sync (`pip install -e .`)")
    if as_json:
        click.echo(json.dumps([{"name": name, "target": target} for name, target in installed.items()]))
        return
    for name, target in installed.items():
        click.echo(f"{name}\t{target}")


class InstalledDownloader(click.Choice):
    """A choice among the installed downloaders, a usage error (exit status 2) naming them otherwise, and
    the nearest one for a typo. The entry points are read when a choice is needed (a value given, --help,
    completion), not when the command line is built: `pulp-sync` starts without scanning them."""

    def __init__(self) -> None:
        self._installed: tuple[str, ...] | None = None
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        if self._installed is None:
            self._installed = tuple(available())
        return self._installed

    @choices.setter
    def choices(self, given: Any) -> None:
        """click.Choice sets its choices when made; these are the entry points', read when first needed."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as error:
            near = difflib.get_close_matches(str(value), self.choices, n=1)
            if not near and self.choices:
                raise
            hint = f"did you mean {near[0]!r}?" if near else "no downloader is installed: `pip install -e .`"
            self.fail(f"{error.message.rstrip('.')}; {hint}", param, ctx)
