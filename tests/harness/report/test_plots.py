"""harness.report.plots: colours by engine (never red), and an axis no outlier can stretch."""

from __future__ import annotations

import warnings
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg

from harness.analysis.findings import analyse
from harness.experiment.spec import Experiment
from harness.experiment.variant import CommandVariant, InlineVariant
from harness.report.plots import _bars, _colours, _time_bar, plot_experiment
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
