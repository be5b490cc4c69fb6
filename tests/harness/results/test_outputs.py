"""Outputs from synthetic runs: counts, failed runs kept but never averaged, plots, a parseable report."""

from __future__ import annotations

import base64
import csv
import io
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.image
import pytest

from harness.analysis.derived import save_run_outputs
from harness.analysis.findings import analyse
from harness.experiment.spec import Experiment
from harness.experiment.variant import CommandVariant, InlineVariant
from harness.report.render import render
from harness.results.folder import Results, load_results
from harness.results.warning import Kind
from tests.harness.helpers import make_run

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class _Collector(HTMLParser):
    """Tags, image sources and text of an HTML page; raises on nothing, so we check structure ourselves."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.images: list[str] = []
        """Each plot's name (its alt text)."""
        self.embedded: list[str] = []
        """Each plot's src: a data: URI, so that the page alone shows it."""
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs)["alt"] or "")
            self.embedded.append(dict(attrs)["src"] or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_report(path: Path) -> _Collector:
    """Parse report.html; fails on leftover template syntax."""
    text = path.read_text()
    assert not any(syntax in text for syntax in ("{{", "{%", "{#")), "template syntax left in report.html"
    collector = _Collector()
    collector.feed(text)
    collector.close()
    return collector


def check_png(path: Path | str) -> None:
    """A real PNG, in a file or a data: URI: the signature, and matplotlib reads it back as a non-empty image."""
    if isinstance(path, str):
        assert path.startswith("data:image/png;base64,"), path[:40]
        data = base64.b64decode(path.removeprefix("data:image/png;base64,"))
    else:
        data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    image = matplotlib.image.imread(io.BytesIO(data), format="png")
    assert image.shape[0] > 100 and image.shape[1] > 100


@pytest.fixture
def results() -> Results:
    spec = Experiment(name="synthetic",
                      variants=(InlineVariant("asyncio", "asyncio"), InlineVariant("futures", "futures")),
                      manifests=("100", "200"), runs=3, warmup=1, baseline="futures")
    runs = []
    for manifest, base in (("100", 1.0), ("200", 2.0)):
        runs += [make_run("asyncio", base, 1, manifest, warmup=True),
                 make_run("futures", base * 1.3, 1, manifest, warmup=True)]
        for round_, jitter in zip((2, 3, 4), (0.0, 0.02, -0.02), strict=True):
            runs += [make_run("asyncio", base + jitter, round_, manifest),
                     make_run("futures", base * 1.3 + jitter, round_, manifest)]
    runs.append(make_run("futures", None, 5, "200", ok=False, error="Error: boom", returncode=1))
    return Results(experiment=spec, runs=runs, manifests={"100": {"files": 100, "bytes": 10_000_000}})


def test_failed_and_warmup_runs_are_kept_but_not_averaged(results: Results) -> None:
    analysis = analyse(results.experiment, results.runs)
    cell = analysis.cell("200", "futures")
    assert cell.time is not None and cell.time.n == 3 and cell.failed == 1
    assert cell.time.mean == pytest.approx(2.6)
    (failed,) = [warning for warning in analysis.warnings if warning.kind is Kind.FAILED_RUNS]
    assert failed.subject == "200 x futures" and failed.text.startswith("1 counted run failed"), failed
    assert {"kind": "failed-runs", "subject": "200 x futures", "text": failed.text} in analysis.as_dict()["warnings"]
    average = analysis.average_change["asyncio"]
    assert average.percent == pytest.approx((1 / 1.3 - 1) * 100, rel=1e-3)
    # three rounds are too few for a bootstrap verdict (harness.analysis.stats.bootstrap_min_rounds)
    assert (average.rounds, average.judged, average.ci_low, average.verdict) == (3, False, None, "no difference")


def test_files_written_after_a_run_have_the_right_counts(tmp_path: Path, results: Results) -> None:
    save_run_outputs(tmp_path, results)
    rows = list(csv.DictReader((tmp_path / "runs.csv").open()))
    assert len(rows) == len(results.runs) == 17
    assert (tmp_path / "perf_data_futures_200.txt").read_text().count("\n") == 3
    assert (tmp_path / "perf_data_asyncio_100.txt").read_text().splitlines() == ["1.000", "1.020", "0.980"]
    assert load_results(tmp_path).runs == results.runs


def test_render_makes_plots_summary_and_a_report(tmp_path: Path, results: Results) -> None:
    save_run_outputs(tmp_path, results)
    rendered = render(tmp_path)
    for name in rendered.plots:
        check_png(tmp_path / f"{name}.png")
        assert (tmp_path / f"{name}.svg").read_text().lstrip().startswith("<?xml")
    page = parse_report(rendered.report)
    assert {"table", "img", "h1"} <= set(page.tags)
    assert sorted(page.images) == sorted(rendered.plots) and "ratios" in rendered.plots
    for source in page.embedded:
        check_png(source)
    text = " ".join(page.text)
    assert "asyncio ran 1.30" in text and "Error: boom" in text
    summary = (tmp_path / "summary.md").read_text()
    assert "## Mean sync time (s)" in summary and "| 100 | 100 | 10.0 | 1.000 | 1.300 |" in summary
    assert "processes" not in rendered.plots, "no processes plot when every sync is one process"


def test_what_auto_came_to_is_said_when_it_is_one_process_too(tmp_path: Path) -> None:
    spec = Experiment(name="cores", variants=(InlineVariant("auto", "asyncio", processes="auto"),),
                      manifests=("100",), runs=2, warmup=0)
    runs = [make_run("auto", 1.0, round_, processes=1, connections=10) for round_ in (1, 2)]
    save_run_outputs(tmp_path, Results(experiment=spec, runs=runs, manifests={"100": {"files": 100, "bytes": 10**7}}))
    assert render(tmp_path).view.splits == (
        "100 x auto: processes = auto came to 1 process holding 10 connections (medians of counted runs)",)


def test_variants_that_split_their_sync_get_throughput_against_processes(tmp_path: Path) -> None:
    variants = (InlineVariant("one", "asyncio"), InlineVariant("two", "asyncio", processes=2),
                InlineVariant("auto", "asyncio", processes="auto"),
                CommandVariant("curl", kind="command", command="curl --config {curl_config}"))
    spec = Experiment(name="cores", variants=variants, manifests=("100",), runs=3, warmup=0, baseline="one")
    used = {"one": (1, 3.0), "two": (2, 2.0), "auto": (2, 2.1), "curl": (None, 1.0)}
    runs = [make_run(name, seconds * (1 + 0.01 * round_), round_, processes=processes, connections=10)
            for round_ in (1, 2, 3) for name, (processes, seconds) in used.items()]
    save_run_outputs(tmp_path, Results(experiment=spec, runs=runs, manifests={"100": {"files": 100, "bytes": 10**7}}))
    rendered = render(tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "- 100 x two: 2 processes sharing 10 connections (medians of counted runs)" in summary
    assert "- 100 x auto: processes = auto came to 2 processes sharing 10 connections (medians of counted runs)" \
        in summary, "what auto came to, in summary.md as in the terminal (the same view's lines)"
    assert "100 x one:" not in summary, "an unsplit sync's connections are its concurrency, in the variant"
    assert "| 100 | two | 0.40 | 100.0 | 0.010 | 0.020 | 0.030 | 2 | 10 |" in summary, "the resources' columns"
    assert "2 processes sharing 10 connections" in " ".join(parse_report(rendered.report).text)
    assert "processes" in rendered.plots
    assert rendered.view.splits == tuple(line.removeprefix("- ") for line in summary.splitlines()
                                         if line.startswith("- 100 x "))
    check_png(tmp_path / "processes.png")
    svg = (tmp_path / "processes.svg").read_text()
    assert all(label in svg for label in ("asyncio (auto)", "curl", "files/s", "MB/s")), "legend and panels"


def _rounds(times: dict[str, tuple[float, float]], rounds: int = 6) -> Results:
    """Variants in spec order on odd rounds and reversed on even ones, as harness.run.schedule plans them;
    `times` gives each variant's time in (odd, even) rounds, with a little jitter."""
    names = list(times)
    spec = Experiment(name="order", variants=tuple(InlineVariant(name, "asyncio") for name in names),
                      manifests=("100",), runs=rounds, warmup=0, baseline=names[0])
    runs = []
    for round_ in range(1, rounds + 1):
        order = names if round_ % 2 else names[::-1]
        for position, name in enumerate(order, start=1):
            seconds = times[name][0 if round_ % 2 else 1] * (1 + 0.01 * (round_ % 3))
            runs.append(make_run(name, seconds, round_, "100", position=position))
    return Results(experiment=spec, runs=runs, manifests={"100": {"files": 100, "bytes": 10_000_000}})


def test_a_variant_slowed_by_what_ran_before_it_in_its_round_is_named() -> None:
    results = _rounds({"heavy": (30.0, 30.0), "after": (6.0, 2.6), "steady": (3.0, 3.0)})
    warnings = analyse(results.experiment, results.runs).warnings
    (found,) = [w for w in warnings if w.kind is Kind.CARRYOVER]
    assert found.subject == "100 x after", found
    assert found.text.startswith("its runs that came after heavy in their round took 2.3x as long"), found


def test_no_carryover_is_claimed_for_an_even_spread() -> None:
    results = _rounds({"first": (3.0, 3.05), "second": (3.1, 3.0), "third": (2.9, 3.0)})
    assert not [w for w in analyse(results.experiment, results.runs).warnings if w.kind is Kind.CARRYOVER]
