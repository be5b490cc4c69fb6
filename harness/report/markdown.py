"""summary.md: the seed's Data Summary tables (mean, stddev), every cell, the comparisons, a sweep's
recommendations and auto against its fixed settings, the warnings and the harness's overhead, as
GitHub-flavoured Markdown from a ReportView.

Plain text that reads well in a terminal, a diff or a pull request; report.html shows the same view
with the plots.
"""

from __future__ import annotations

from harness.report.view import ReportView, Table
from harness.results.warning import FigureWarning

__all__ = ["summary_markdown", "markdown_table"]


def summary_markdown(view: ReportView) -> str:
    """The text of summary.md."""
    lines = [f"# {view.name}", "", *([view.description, ""] if view.description else []), view.setup, ""]
    lines += [*(f"- {line}" for line in view.sources), *([""] if view.sources else [])]
    lines += ["## Mean sync time (s)", "", *markdown_table(view.means)]
    lines += ["", "## Std. deviation of sync time (s)", "", *markdown_table(view.stdevs)]
    lines += ["", "## Every cell", "", *markdown_table(view.cells), *([""] if view.splits else [])]
    lines += [f"- {line}" for line in view.splits]
    lines += ["", "## Resources (means of counted runs; processes and connections: medians)", "",
              *markdown_table(view.resources)]
    if view.pairs:
        lines += ["", f"## Against {view.baseline}", "", *markdown_table(view.pair_table)]
        lines += ["", *(f"- {line}" for line in (*view.averages, *view.disagreements))]
    if view.peers:
        lines += ["", "## Against the fastest peer", "", *(f"- {line}" for line in view.peers)]
    if view.sweep:
        lines += ["", f"## Recommended {view.sweep.label}", "", *markdown_table(view.sweep.table), ""]
        lines += [f"- {line}" for line in view.sweep.sentences]
    if view.auto:
        lines += ["", "## auto against the fixed settings", "", view.auto.targets, "", *markdown_table(view.auto.table)]
        lines += ["", *(f"- {line}" for line in view.auto.sentences)]
    if view.warnings:
        lines += ["", "## Warnings", "", *(f"- {_warning(warning)}" for warning in view.warnings)]
    lines += ["", "## Harness overhead", "", view.overhead, ""]
    return "\n".join(lines)


def markdown_table(table: Table) -> list[str]:
    """A GitHub-flavoured Markdown table, one line per row."""
    lines = ["| " + " | ".join(table.header) + " |", "|" + "|".join("---" for _ in table.header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in table.rows]


def _warning(warning: FigureWarning) -> str:
    return f"**{warning.subject}**: {warning.text}" if warning.subject else warning.text
