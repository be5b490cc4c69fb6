"""A tiny real experiment through the command line: every output, with the right counts.

2 variants x 1 manifest x 3 runs on a ~2 MB tree; each run is a reset child and a sync child.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.harness.helpers import run_bench, write_spec
from tests.harness.results.test_outputs import check_png, parse_report

VARIANTS = """
runs = 3
warmup = 0
profile = "loopback"
baseline = "futures"

[[variants]]
name = "asyncio"
downloader = "asyncio"

[[variants]]
name = "futures"
downloader = "futures"
"""


@pytest.fixture(scope="module")
def smoke(tiny_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The folder of one tiny experiment, and what the command printed."""
    work = tmp_path_factory.mktemp("smoke")
    spec = write_spec(work, tiny_tree, VARIANTS)
    done = run_bench("run", str(spec), "--out", str(work / "out"), "--state-dir", str(work / "state"), cwd=work)
    return work / "out", done.stdout


def test_every_output_is_written_with_the_right_counts(smoke: tuple[Path, str]) -> None:
    folder, _ = smoke
    rows = list(csv.DictReader((folder / "runs.csv").open()))
    assert len(rows) == 6 and {row["ok"] for row in rows} == {"True"}
    assert [row["variant"] for row in rows] == ["asyncio", "futures", "futures", "asyncio", "asyncio", "futures"]
    for variant in ("asyncio", "futures"):
        times = [float(line) for line in (folder / f"perf_data_{variant}_100.txt").read_text().splitlines()]
        assert len(times) == 3 and all(seconds > 0 for seconds in times)
    document = json.loads((folder / "results.json").read_text())
    assert len(document["runs"]) == 6 and document["finished_at"]
    environment = document["environment"]
    assert environment["git"]["commit"] and environment["packages"]["scipy"] and environment["installed"]["pytest"]
    asyncio = environment["downloaders"]["asyncio"]
    assert asyncio["distribution"] == "pulp-sync" and asyncio["requires"]["aiohttp"], "the plugin and its libraries"
    assert environment["machine_state"]["before"]["load_average"] and environment["machine_state"]["after"]["at"]
    during = environment["machine_state"]["during"]
    assert during["samples"] >= 1 and during["seconds"] > 0 and isinstance(during["busiest"], list), during
    assert environment["state_filesystem"]["type"], "the filesystem the runs' store is on"
    assert document["manifests"]["100"]["files"] == 100
    for cell in document["statistics"]["cells"]:
        rate = cell["files_per_second"]
        assert rate["geometric_mean"] == pytest.approx(100 / cell["time"]["mean"], rel=0.2)
    for row in rows:
        assert int(row["artifacts_downloaded"]) == 100 and float(row["wall_seconds"]) > float(row["sync_seconds"])
        assert float(row["reset_seconds"]) > 0 and float(row["peak_rss_mb"]) > 10


def test_confidence_intervals_contain_the_mean(smoke: tuple[Path, str]) -> None:
    folder, _ = smoke
    cells = json.loads((folder / "results.json").read_text())["statistics"]["cells"]
    assert len(cells) == 2
    for cell in cells:
        time = cell["time"]
        assert time["n"] == 3 and time["ci_low"] <= time["mean"] <= time["ci_high"]
        assert time["min"] <= time["median"] <= time["max"]


def test_report_parses_and_plots_are_images(smoke: tuple[Path, str]) -> None:
    folder, stdout = smoke
    page = parse_report(folder / "report.html")
    assert sorted(page.images) == ["ratios", "sync_time", "throughput", "timeline"] and "table" in page.tags
    for name, source in zip(page.images, page.embedded, strict=True):
        check_png(source)
        check_png(folder / f"{name}.png")
        assert (folder / f"{name}.svg").is_file()
    assert "## Mean sync time (s)" in (folder / "summary.md").read_text()
    assert f"Report: {folder / 'report.html'}" in stdout and "times faster than" in stdout


def test_report_re_renders_and_resume_adds_only_the_missing_runs(smoke: tuple[Path, str], tiny_tree: Path) -> None:
    folder, _ = smoke
    work = folder.parent
    (folder / "report.html").unlink()
    run_bench("report", str(folder), cwd=work)
    assert (folder / "report.html").is_file()
    spec = work / "tiny.toml"
    run_bench("run", str(spec), "--out", str(folder), "--resume", "--runs", "4", "--state-dir", str(work / "state"),
              cwd=work)
    rows = list(csv.DictReader((folder / "runs.csv").open()))
    assert len(rows) == 8 and [row["round"] for row in rows[6:]] == ["4", "4"]
    assert len((folder / "perf_data_asyncio_100.txt").read_text().splitlines()) == 4
