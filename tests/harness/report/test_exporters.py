"""The outputs render one ReportView: report.html escapes whatever text reaches it, and the terminal and
summary.md show the view's warnings and verdicts, word for word."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest
from markupsafe import escape
from rich.console import Console

from harness.analysis.derived import save_run_outputs
from harness.analysis.findings import analyse
from harness.analysis.stats import compare
from harness.experiment.spec import Experiment
from harness.experiment.variant import InlineVariant
from harness.report.html import report_html
from harness.report.markdown import summary_markdown
from harness.report.render import render
from harness.report.terminal import print_summary
from harness.report.view import PairLine, ReportView, build_view
from harness.report.wording import verdict
from harness.results.folder import Results
from harness.results.warning import FigureWarning, Kind
from tests.harness.helpers import make_run
from tests.harness.results.test_outputs import parse_report

HOSTILE = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _results(description: str = "", variants: tuple[str, str] = ("fast", "slow")) -> Results:
    """Two variants on one manifest, three rounds, the second 20% slower, and one failed run."""
    fast, slow = variants
    spec = Experiment(name="exporters", variants=(InlineVariant(fast, "asyncio"), InlineVariant(slow, "futures")),
                      manifests=("100",), runs=3, warmup=0, baseline=fast, description=description)
    runs = [run for round_, jitter in enumerate((0.0, 0.01, -0.01), start=1)
            for run in (make_run(fast, 1.0 + jitter, round_), make_run(slow, 1.2 + jitter, round_))]
    runs.append(make_run(slow, None, 4, ok=False, error=f"Error: {HOSTILE}", returncode=1))
    return Results(experiment=spec, runs=runs, manifests={"100": {"files": 100, "bytes": 10_000_000}})


def _terminal(view: ReportView) -> str:
    """What print_summary shows, as plain text on a console wide enough that no line wraps."""
    buffer = io.StringIO()
    print_summary(Console(file=buffer, width=400, color_system=None), view)
    return buffer.getvalue()


def test_a_hostile_description_and_error_are_escaped_in_report_html(tmp_path: Path) -> None:
    save_run_outputs(tmp_path, _results(description=HOSTILE))
    text = render(tmp_path).report.read_text()

    assert HOSTILE not in text
    assert f"<p>{ESCAPED}</p>" in text and f"Error: {ESCAPED}" in text
    assert "script" not in parse_report(tmp_path / "report.html").tags


def test_a_hostile_variant_name_is_escaped_in_report_html(tmp_path: Path) -> None:
    # a spec refuses such a name (harness.experiment.spec); the page escapes it all the same
    results = _results(variants=("fast", HOSTILE))
    view = build_view(results, analyse(results.experiment, results.runs), tmp_path, plots=())

    text = report_html(view)

    assert HOSTILE not in text and f"<td>{ESCAPED}</td>" in text
    assert '<span class="slower">slower: ' in text


@pytest.fixture
def view(tmp_path: Path) -> ReportView:
    """A rendered folder's view with a warning and a pair verdict of its own, whose text no analysis would
    write: an output shows them only if it renders the view rather than shaping the results again."""
    save_run_outputs(tmp_path, _results())
    rendered = render(tmp_path).view
    (pair,) = rendered.pairs
    planted = PairLine(pair.manifest, pair.variant, "+99.9%", "slow ran 9.99 times slower [planted]", "0.0042",
                       "0.0043", "slower by a planted 99.9% [95% CI 1–2%]", "slower")
    warnings = (*rendered.warnings, FigureWarning(Kind.NOISY, "100 x [slow]", "a planted warning [not markup]"),
                FigureWarning(Kind.LOAD, "", "a planted warning about the whole machine"))
    return dataclasses.replace(rendered, pairs=(planted,), warnings=warnings)


def test_markdown_and_terminal_show_the_views_warnings_and_verdicts(view: ReportView) -> None:
    markdown, terminal = summary_markdown(view), _terminal(view)

    assert [warning.kind for warning in view.warnings][0] is Kind.FAILED_RUNS
    for warning in view.warnings:
        subject = f"**{warning.subject}**: " if warning.subject else ""
        assert f"- {subject}{warning.text}\n" in markdown
        assert f"Warning: {warning}\n" in terminal
    for pair in view.pairs:
        assert "| " + " | ".join(pair.row) + " |" in markdown
        assert (f"{pair.manifest}: {pair.sentence} ({pair.change} time, Holm-adjusted p = {pair.p_adjusted}, "
                f"{pair.verdict})\n") in terminal


def test_the_terminal_draws_a_verdict_in_its_directions_colour(view: ReportView) -> None:
    buffer = io.StringIO()
    print_summary(Console(file=buffer, width=400, force_terminal=True, color_system="standard"), view)

    (pair,) = view.pairs
    assert f"\x1b[31m{pair.verdict}\x1b[0m" in buffer.getvalue(), "slower is red"


def test_every_output_says_why_the_average_and_the_manifests_differ(view: ReportView, tmp_path: Path) -> None:
    line = "Why slow's average and manifests differ: a planted reason [not markup]"
    view = dataclasses.replace(view, disagreements=(line,))
    markdown, terminal, html = summary_markdown(view), _terminal(view), report_html(view)

    assert f"- {line}\n" in markdown and f"{line}\n" in terminal
    assert f'<li class="disagreement">{escape(line)}</li>' in html, "one plain line, not bold as a conclusion"


def test_a_speed_up_is_said_in_time_saved_and_in_times_faster() -> None:
    """4.64 times faster is "78.4% less time", never "faster by 78.4%" (which reads as 1.78 times)."""
    comparison = compare([4.64, 4.65, 4.63, 4.64], [1.0, 1.01, 0.99, 1.0], paired=True)
    said = verdict(comparison)
    assert said.startswith("faster: 78.4% less time [95% CI "), said
    assert comparison.speedup == pytest.approx(4.64, abs=0.01)
    slower = verdict(compare([1.0, 1.01, 0.99, 1.0], [1.5, 1.51, 1.49, 1.5], paired=True))
    assert slower.startswith("slower: 50.0% more time [95% CI "), slower
