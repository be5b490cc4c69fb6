"""The findings on the terminal with rich, at the end of `bench run`, `bench sweep` and `bench report`:
the sources, the table of every cell and the processes and connections of split syncs, each pair's verdict
in its colour, the conclusions, the warnings.

The text is the ReportView's, escaped for rich's markup, so the terminal says what summary.md and
report.html say.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.report.view import PairLine, ReportView
from harness.results.warning import FigureWarning

__all__ = ["print_summary"]

_COLOURS = {"faster": "green", "slower": "red", "no-difference": "dim"}
"""rich's colour of each verdict direction: report.html's green, red and grey."""


def print_summary(console: Console, view: ReportView) -> None:
    """The summary table, the comparisons and the warnings on `console`."""
    for line in view.sources:
        console.print(line, highlight=False, markup=False)
    table = Table(*map(escape, view.cells.header), title=f"{escape(view.name)}: sync time per manifest and variant",
                  caption=escape(view.setup))
    for row in view.cells.rows:
        table.add_row(*map(escape, row))
    console.print(table)
    for line in view.splits:
        console.print(line, highlight=False, markup=False)
    for pair in view.pairs:
        console.print(_pair(pair), highlight=False)
    for line in view.conclusions:
        console.print(escape(line))
    for warning in view.warnings:
        console.print(_warning(warning), highlight=False)


def _pair(pair: PairLine) -> str:
    """"100: asyncio ran 1.30 times faster than futures [...] (-23.1% time, Holm-adjusted p = 0.0001, faster
    by ...)", the verdict in its direction's colour."""
    colour = _COLOURS[pair.direction]
    return (f"{escape(pair.manifest)}: {escape(pair.sentence)} ({escape(pair.change)} time, Holm-adjusted p = "
            f"{escape(pair.p_adjusted)}, [{colour}]{escape(pair.verdict)}[/{colour}])")


def _warning(warning: FigureWarning) -> str:
    subject = f"[bold]{escape(warning.subject)}[/bold]: " if warning.subject else ""
    return f"[yellow]Warning:[/yellow] {subject}{escape(warning.text)}"
