"""The one way our commands make rich's console: as rich makes it on a terminal; piped or redirected
(`./manytests.sh | tee log`, CI logs, `| grep`), tables 140 columns wide and no line wrapped, so that each
line of a verdict, an error or a progress report reaches the file whole (rich wraps every line at 80)."""

from __future__ import annotations

from rich.console import Console

from pulp_base import defaults

__all__ = ["console"]


def console(stderr: bool = False) -> Console:
    """rich's console for standard output, or standard error with `stderr`."""
    made = Console(stderr=stderr)
    return made if made.is_terminal else Console(stderr=stderr, width=defaults.PIPED_WIDTH, soft_wrap=True)
