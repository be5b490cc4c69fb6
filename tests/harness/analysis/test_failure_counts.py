"""One count of failed runs everywhere: the table's failed column, the warnings, the exit status's line and
`bench compare` all count the counted runs that failed, and show failed warm-ups apart."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from harness.analysis.compare import gate_problems
from harness.analysis.derived import save_run_outputs
from harness.analysis.findings import analyse
from harness.cli import _exit_for_failures
from harness.experiment.spec import Experiment
from harness.experiment.variant import InlineVariant
from harness.report.render import render
from harness.report.wording import time_row
from harness.results.folder import Results
from harness.results.warning import Kind
from tests.harness.helpers import make_run


def _all_failed() -> Results:
    """Two variants, one manifest, one warm-up and four counted runs each, every one failed."""
    spec = Experiment(name="down", variants=(InlineVariant("asyncio", "asyncio"), InlineVariant("futures", "futures")),
                      manifests=("100",), runs=4, warmup=1)
    runs = [make_run(name, None, round_, ok=False, error="Error: refused", returncode=1, warmup=round_ == 0)
            for round_ in range(5) for name in ("asyncio", "futures")]
    return Results(experiment=spec, runs=runs)


def test_the_table_the_warnings_the_exit_line_and_compare_say_the_same_count(tmp_path: Path) -> None:
    results = _all_failed()
    analysis = analyse(results.experiment, results.runs)
    cell = analysis.cell("100", "asyncio")
    assert (cell.failed, cell.failed_warmups) == (4, 1)
    assert time_row(cell)[-1] == "4 (+1 warm-up)"
    texts = [warning.text for warning in analysis.warnings if warning.kind is Kind.FAILED_RUNS]
    assert texts and all(text.startswith("4 counted runs (and 1 warm-up) failed") for text in texts), texts

    save_run_outputs(tmp_path, results)
    with pytest.raises(click.ClickException) as refused:
        _exit_for_failures(render(tmp_path), allow_failures=False)
    assert refused.value.message.startswith("8 of 8 counted runs failed (and 2 warm-ups); the report lists them")

    (problem,) = gate_problems(results, results)[-1:]
    assert "100 x asyncio: 4 of 4 counted runs failed" in problem.line, problem.line
