"""`pulp-sync downloaders`: which downloader plugins are installed, read from their entry points without
importing them (docs/plugins.md)."""

from __future__ import annotations

import click

from downloaders import available

__all__ = ["list_downloaders"]


@click.command("downloaders")
def list_downloaders() -> None:
    """List the installed downloaders (entry points in `pulp_sync.downloaders`) and where they come from."""
    installed = available()
    if not installed:
        raise click.ClickException("no downloaders installed; install pulp-sync (`pip install -e .`)")
    for name, target in installed.items():
        click.echo(f"{name}\t{target}")
