"""harness.report.plots: colours by engine (never red), an axis no outlier can stretch, and what is drawn of
auto: a level across a sweep's values, and its limit over time."""

from __future__ import annotations

import warnings
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg

from harness.analysis.auto import auto_runs
from harness.analysis.findings import analyse
from harness.analysis.sweep import AutoLine, SweepLine
from harness.experiment.spec import Experiment
from harness.experiment.variant import CommandVariant, InlineVariant
from harness.report.plots import (
    AUTO_CONCURRENCY,
    _auto_concurrency,
    _bars,
    _colours,
    _sweep_figure,
    _time_bar,
    plot_experiment,
)
from harness.results.folder import Results
from tests.harness.helpers import make_run


def test_each_engine_keeps_one_colour_family_and_none_is_red() -> None:
    variants = [InlineVariant(f"{engine}-c{n}", engine) for engine in ("asyncio", "futures", "pycurl", "httpx", "e5")
                for n in (2, 4, 8)]
    variants.append(CommandVariant("curl", kind="command", command="curl --config {curl_config}"))
    colours = _colours(variants)
    assert len(set(colours.values())) == len(variants), "every variant its own shade"
    for engine in ("asyncio", "futures", "pycurl", "httpx", "e5"):
        shades = [colours[f"{engine}-c{n}"] for n in (2, 4, 8)]
        dominant = {max(range(3), key=lambda channel, shade=shade: shade[channel]) for shade in shades}
        assert len(dominant) == 1, (engine, shades)  # one hue, lighter or darker
    assert not [name for name, (red, green, blue, _) in colours.items() if red > 0.6 and max(green, blue) < 0.35], \
        "red is the report's colour for slower and failed"


def test_a_run_far_beyond_every_interval_does_not_stretch_the_axis() -> None:
    spec = Experiment(name="outlier", variants=(InlineVariant("asyncio", "asyncio"),), manifests=("100",), runs=6)
    times = [1.0, 1.02, 0.98, 1.01, 0.99, 40.0]
    results = Results(experiment=spec, runs=[make_run("asyncio", t, n) for n, t in enumerate(times, start=1)])
    figure = _bars(results, analyse(spec, results.runs), ("Sync time (s)", "mean ± 1 stddev"), _time_bar,
                   lambda run: run.sync_seconds)
    (axes,) = figure.axes
    cell = analyse(spec, results.runs).cell("100", "asyncio").time
    assert cell is not None and cell.stdev is not None
    assert axes.get_ylim()[1] < 40.0 and axes.get_ylim()[1] >= cell.mean + cell.stdev, axes.get_ylim()


def test_an_experiment_whose_runs_all_failed_plots_without_a_warning(tmp_path: Path) -> None:
    """matplotlib's "No artists with labels found to put in legend" is not the harness's to print."""
    spec = Experiment(name="failing",
                      variants=(InlineVariant("asyncio", "asyncio"), InlineVariant("futures", "futures")),
                      manifests=("100",), runs=2)
    runs = [make_run(name, None, n, ok=False, error="boom", returncode=1)
            for n in (1, 2) for name in ("asyncio", "futures")]
    results = Results(experiment=spec, runs=runs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        written = plot_experiment(tmp_path, results, analyse(spec, runs))
    assert written == ["sync_time", "throughput", "timeline"]
    assert all((tmp_path / f"{name}.png").is_file() for name in written)


def test_the_titles_fit_the_figure_with_one_manifest() -> None:
    """One manifest makes the narrowest figure; its two-line title is wrapped to it, not clipped on both sides."""
    spec = Experiment(name="seed-002",
                      variants=(InlineVariant("asyncio", "asyncio"), InlineVariant("futures", "futures")),
                      manifests=("100",), runs=2)
    runs = [make_run(name, 1.0 + n / 10, n) for n in (1, 2) for name in ("asyncio", "futures")]
    figure = _bars(Results(experiment=spec, runs=runs), analyse(spec, runs), ("Sync time (s)", "mean ± 1 stddev"),
                   _time_bar, lambda run: run.sync_seconds)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    (axes,) = figure.axes
    title = axes.title.get_window_extent(canvas.get_renderer())
    assert 0 <= title.x0 and title.x1 <= figure.bbox.x1 and title.y1 <= figure.bbox.y1, (title, figure.bbox)


def test_a_sweeps_auto_variant_is_a_level_across_its_groups_values_with_its_band() -> None:
    """What the sweep plot draws of auto: a dashed level at its geometric mean from the smallest to the largest
    fixed value of its group, its 95% CI a band over the same span, labelled where it settled."""
    lines = [SweepLine("asyncio (wan)", [1, 4, 16], [2.0, 7.0, 9.0], [1.9, 6.8, 8.7], [2.1, 7.2, 9.3], 16),
             SweepLine("asyncio (lan)", [2, 8], [5.0, 6.0], [4.8, 5.9], [5.2, 6.1], None)]
    autos = [AutoLine("asyncio (wan)", "wan-auto", 8.8, 8.5, 9.1, 12.0)]
    figure = _sweep_figure(lines, "t", "download concurrency", autos)
    (axes,) = figure.axes
    (level,) = [c for c in axes.collections if c.get_label() == "asyncio (wan): auto (settled at 12)"]
    assert [segment.tolist() for segment in level.get_segments()] == [[[1.0, 8.8], [16.0, 8.8]]]
    assert level.get_linestyle() != [(0, None)], "dashed, not the curves' solid line"
    band = axes.collections[axes.collections.index(level) + 1].get_paths()[0].vertices
    assert (band[:, 0].min(), band[:, 0].max(), band[:, 1].min(), band[:, 1].max()) == (1.0, 16.0, 8.5, 9.1)
    assert [tick.get_text() for tick in axes.get_xticklabels()] == ["1", "2", "4", "8", "16"], "auto is no tick"


def test_autos_limit_over_time_is_a_step_line_per_counted_run(tmp_path: Path) -> None:
    trajectories = [((0.0, 4), (0.5, 8), (1.0, 6)), ((0.0, 4), (0.4, 8), (0.9, 16), (1.2, 8))]
    variants = (InlineVariant("c8", "asyncio", download_concurrency=8), InlineVariant("auto", "asyncio",
                                                                                      download_concurrency="auto"))
    spec = Experiment(name="auto", variants=variants, manifests=("100",), runs=2, kind="sweep")
    runs = [make_run("c8", 1.0, n, concurrency=8) for n in (1, 2)]
    runs += [make_run("auto", 1.5, n, concurrency=8, auto_concurrency=True, concurrency_trajectory=trajectory)
             for n, trajectory in enumerate(trajectories, start=1)]
    runs.append(make_run("auto", 9.0, 3, warmup=True, concurrency_trajectory=((0.0, 64),)))  # not counted
    results = Results(experiment=spec, runs=runs)
    analysis = analyse(spec, runs)
    assert AUTO_CONCURRENCY in plot_experiment(tmp_path, results, analysis)
    assert (tmp_path / f"{AUTO_CONCURRENCY}.png").is_file() and (tmp_path / f"{AUTO_CONCURRENCY}.svg").is_file()
    figure = _auto_concurrency(results, analysis, auto_runs(spec, runs))
    (axes,) = figure.axes
    *steps, best = axes.lines
    assert [(line.get_xdata().tolist(), line.get_ydata().tolist()) for line in steps] == [
        ([0.0, 0.5, 1.0, 1.5], [4, 8, 6, 6]), ([0.0, 0.4, 0.9, 1.2, 1.5], [4, 8, 16, 8, 8])]
    assert {line.get_drawstyle() for line in steps} == {"steps-post"}
    assert best.get_label() == "best fixed: 8" and list(best.get_ydata()) == [8, 8]
    assert axes.get_title() == "asyncio on 100 (auto): 2 counted runs"
