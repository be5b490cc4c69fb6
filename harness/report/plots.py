"""Plots as PNG and SVG with matplotlib's Agg canvas (no display, no pyplot global state).

Each plot shows the spread as well as the centre: time bars are means with one stddev, throughput
bars are geometric means with their 95% CI (computed in log space, so never below 0 and as
asymmetric as the rates; harness.analysis.stats.describe), and every counted run is a dot, so a reader sees
what the centre hides.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from harness.analysis.auto import AutoRuns, auto_runs, auto_verdicts, steps
from harness.analysis.findings import Analysis, Cell, throughput_mb_s
from harness.analysis.stats import Summary
from harness.analysis.sweep import AutoLine, SweepLine
from harness.experiment.variant import CommandVariant, PulpSyncVariant, Variant
from harness.results.folder import Results
from harness.results.records import RunRecord

__all__ = ["FORMATS", "AUTO_CONCURRENCY", "plot_experiment", "plot_sweep"]

FORMATS = ("png", "svg")
_JITTER = 0.08
"""Half-width of the random sideways shift of run dots, as a fraction of a bar group."""
_FAMILIES = ("Blues", "Greens", "Purples", "Greys", "YlGnBu", "BuPu", "GnBu", "PuBu")
"""One colour family per engine (downloader, or program), so that its variants read as one; never red,
which the report keeps for slower and failed."""
_CLEARANCE = 1.15
"""The y axis ends this far above the highest bar with its error bar: a run far above every interval
is drawn at the edge, not allowed to squash the bars."""


def _colours(variants: Sequence[Variant]) -> dict[str, Any]:
    """Each variant's colour: its engine's family (_FAMILIES), a shade per variant of that engine."""
    engines: dict[str, list[str]] = {}
    for variant in variants:
        engines.setdefault(variant.engine, []).append(variant.name)
    colours = {}
    for family, names in zip(_FAMILIES * len(engines), engines.values(), strict=False):
        shades = np.linspace(0.85, 0.45, len(names)) if len(names) > 1 else [0.7]
        colours.update({name: colormaps[family](shade) for name, shade in zip(names, shades, strict=True)})
    return colours



def plot_experiment(folder: Path, results: Results, analysis: Analysis) -> list[str]:
    """Write every plot of an experiment into `folder`; returns the base names written (no suffix)."""
    written = [
        _save(folder, "sync_time", _bars(results, analysis, ("Sync time (s)", "mean ± 1 stddev"), _time_bar,
                                         lambda r: r.sync_seconds)),
        _save(folder, "throughput", _bars(results, analysis, ("Throughput (MB/s)", "geometric mean, 95% CI"),
                                          _rate_bar, throughput_mb_s)),
        _save(folder, "timeline", _timeline(results)),
    ]
    if any(pair.comparison is not None for pair in analysis.pairs):
        written.append(_save(folder, "ratios", _ratios(results, analysis)))
    if len({str(variant.processes) for variant in _syncs(results)}) > 1:
        written.append(_save(folder, "processes", _processes(results, analysis)))
    panels = auto_runs(results.experiment, results.runs)
    if panels:
        written.append(_save(folder, AUTO_CONCURRENCY, _auto_concurrency(results, analysis, panels)))
    return written


def plot_sweep(folder: Path, lines: Sequence[SweepLine], title: str, name: str = "sweep",
               xlabel: str = "download concurrency", autos: Sequence[AutoLine] = ()) -> str:
    """Throughput against the swept setting per group, CI as a band, the recommendation circled; each auto
    variant a level across its group's values (_sweep_figure)."""
    return _save(folder, name, _sweep_figure(lines, title, xlabel, autos))


def _sweep_figure(lines: Sequence[SweepLine], title: str, xlabel: str, autos: Sequence[AutoLine] = ()) -> Figure:
    """plot_sweep's figure. The x axis is log2 (sweeps usually double) unless a value is 0 or less
    (max_retries=0,3). An auto variant is no value on that axis: its geometric mean MB/s is a dashed level
    across its group's values in the group's colour, its 95% CI a band, so a reader sees at once which fixed
    values it matches and which it beats."""
    figure = Figure(figsize=(8, 4.5), layout="constrained")
    axes = figure.add_subplot()
    colours: dict[str, Any] = {}
    for group, values, centres, lows, highs, recommended in lines:
        (line,) = axes.plot(values, centres, marker="o", label=group)
        colours[group] = line.get_color()
        axes.fill_between(values, lows, highs, alpha=0.2, color=line.get_color())
        if recommended is not None:
            y = centres[list(values).index(recommended)]
            axes.scatter([recommended], [y], s=220, facecolors="none", edgecolors=line.get_color(), linewidths=2,
                         label=f"{group}: recommended {recommended:g}")
    ticks = sorted({value for line in lines for value in line.values})
    for auto in autos:
        values = next((line.values for line in lines if line.group == auto.group), ticks)
        colour, label = colours.get(auto.group, "black"), f"{auto.group}: {auto.label}"
        if values:
            span = (min(values), max(values))
            axes.hlines(auto.mb_s, *span, colors=[colour], linestyles="--", label=label)
            axes.fill_between(span, auto.ci_low, auto.ci_high, color=colour, alpha=0.1, hatch="//")
        else:  # a sweep of auto alone: no value to span, so the whole axis
            axes.axhline(auto.mb_s, color=colour, linestyle="--", label=label)
            axes.axhspan(auto.ci_low, auto.ci_high, color=colour, alpha=0.1, hatch="//")
    if all(value > 0 for value in ticks):
        axes.set_xscale("log", base=2)
    axes.set_xticks(ticks, [f"{value:g}" for value in ticks])
    axes.minorticks_off()
    axes.set_xlabel(xlabel)
    axes.set_ylabel("throughput (MB/s), geometric mean and 95% CI")
    axes.set_title(title, wrap=True)
    axes.grid(True, alpha=0.3)
    _legend(axes)
    return figure


AUTO_CONCURRENCY = "auto-concurrency"
"""The plot of auto's limit over time (_auto_concurrency)."""


def _auto_concurrency(results: Results, analysis: Analysis, panels: Sequence[AutoRuns]) -> Figure:
    """auto's limit against seconds from the start of the downloads, a panel per auto variant and manifest
    (its group's), each counted run a thin step line held until the run ended: where it settled and how it got
    there, run by run. The best fixed value of its group, where a sweep tried fixed ones, is a dotted level."""
    best = {(row.manifest, row.variant): row.best_value for row in auto_verdicts(results.experiment, analysis)}
    figure = Figure(figsize=(8, 1.2 + 2.8 * len(panels)), layout="constrained")
    grid = figure.subplots(len(panels), 1, squeeze=False)
    for (axes,), panel in zip(grid, panels, strict=True):
        for trajectory, end in panel.runs:
            axes.step(*steps(trajectory, end), where="post", linewidth=0.8, alpha=0.7, color="#1f77b4")
        value = best.get((panel.manifest, panel.variant))
        if value is not None:
            axes.axhline(value, color="black", linestyle=":", label=f"best fixed: {value}")
        axes.set_title(f"{panel.group} on {panel.manifest} ({panel.variant}): {len(panel.runs)} counted runs")
        axes.set_ylabel("downloads in flight")
        axes.set_ylim(bottom=0)
        axes.grid(True, alpha=0.3)
        _legend(axes, fontsize="small", loc="lower right")
    grid[-1][0].set_xlabel("seconds from the start of the downloads (one line per run, held until it ended)")
    figure.suptitle(f"{results.experiment.name}: download_concurrency = auto, its limit over time")
    return figure


def _bars(
    results: Results,
    analysis: Analysis,
    labels: tuple[str, str],
    bar: Callable[[Cell], tuple[float, float, float] | None],
    value: Callable[[RunRecord], float | None],
) -> Figure:
    """Grouped bars per manifest and variant, with error bars and every counted run as a dot.
    `labels` are the y axis label and what the bars and error bars show; `bar` gives a cell's bar
    height and how far its error bar reaches below and above it."""
    label, shown = labels
    spec = results.experiment
    names = [variant.name for variant in spec.variants]
    width = 0.8 / len(names)
    figure = Figure(figsize=(max(6.0, (0.8 + 0.25 * len(names)) * len(spec.manifests) + 2), 4.5), layout="constrained")
    axes = figure.add_subplot()
    jitter = np.random.default_rng(0)
    colours = _colours(spec.variants)
    dots: list[tuple[np.ndarray, list[float]]] = []
    top = 0.0
    for index, name in enumerate(names):
        x = np.arange(len(spec.manifests)) + (index - (len(names) - 1) / 2) * width
        heights = [bar(cell) if (cell := analysis.find(manifest, name)) else None for manifest in spec.manifests]
        errors = [[h[1] if h else 0 for h in heights], [h[2] if h else 0 for h in heights]]
        axes.bar(x, [h[0] if h else 0 for h in heights], width * 0.9, yerr=errors,
                 capsize=4, alpha=0.8, label=name, color=colours[name], error_kw={"zorder": 4})
        top = max([top, *(h[0] + h[2] for h in heights if h)])
        for position, manifest in zip(x, spec.manifests, strict=True):
            points = [v for r in results.runs if r.variant == name and r.manifest == manifest and r.counted
                      for v in [value(r)] if v is not None]
            dots.append((position + jitter.uniform(-_JITTER, _JITTER, len(points)) * len(names) * width, points))
    _draw_runs(axes, dots, top * _CLEARANCE)
    axes.set_xticks(np.arange(len(spec.manifests)), [f"{m}" for m in spec.manifests])
    axes.set_xlabel("manifest")
    axes.set_ylabel(label)
    axes.set_title(f"{spec.name}: {label} per manifest\n({shown}; dots: every counted run, "
                   "triangles at the top: runs beyond the axis)", wrap=True)  # one manifest: a narrow figure
    axes.grid(True, axis="y", alpha=0.3)
    _legend(axes, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), ncols=1 + len(names) // 16)
    return figure


def _draw_runs(axes: Any, dots: Sequence[tuple[np.ndarray, list[float]]], ceiling: float) -> None:
    """Every counted run as a dot; the axis ends at `ceiling` (above every bar's interval, when there is
    one), and a run beyond it is a triangle at the edge rather than a reason to squash the bars."""
    highest = max((max(points) for _, points in dots if points), default=0.0)
    limit = ceiling if ceiling > 0 else highest * _CLEARANCE
    for xs, points in dots:
        values = np.array(points, dtype=float)
        inside = values <= limit
        axes.scatter(xs[inside], values[inside], s=10, color="black", alpha=0.7, zorder=3)
        axes.scatter(xs[~inside], np.full((~inside).sum(), limit), s=28, marker="^", color="black", zorder=3,
                     clip_on=False)
    if limit > 0:
        axes.set_ylim(0, limit)


def _time_bar(cell: Cell) -> tuple[float, float, float] | None:
    """Mean sync time and one sample stddev either way (the seed's two figures)."""
    return (cell.time.mean, cell.time.stdev or 0.0, cell.time.stdev or 0.0) if cell.time else None


def _rate_bar(cell: Cell) -> tuple[float, float, float] | None:
    """Geometric mean throughput and its 95% CI, which is not symmetric around it."""
    rate = cell.throughput
    if rate is None or rate.geometric_mean is None:
        return None
    centre = rate.geometric_mean
    if rate.ci_low is None or rate.ci_high is None:
        return centre, 0.0, 0.0
    return centre, centre - rate.ci_low, rate.ci_high - centre


_DIRECTION_COLOURS = {"faster": "#0a6", "slower": "#c22", "no difference": "#777"}
"""The report's colours of a verdict (harness/report/templates/report.html)."""


def _ratios(results: Results, analysis: Analysis) -> Figure:
    """Each variant's time as a ratio of the baseline's, one row per manifest and variant: the point and
    its 95% CI on a log scale (a 2x and a 0.5x lie as far from 1), coloured by the verdict, with the band
    of practical equivalence shaded around 1. What "no difference detected" means is visible: an
    interval crossing 1, or lying inside the band."""
    pairs = [pair for pair in analysis.pairs if pair.comparison is not None]
    figure = Figure(figsize=(8, 1.2 + 0.35 * len(pairs)), layout="constrained")
    axes = figure.add_subplot()
    first = pairs[0].comparison if pairs else None
    band = first.band if first else 0.0
    axes.axvspan(1 / (1 + band), 1 + band, color="#999", alpha=0.2, label=f"±{band:.0%} band: no difference")
    axes.axvline(1, color="black", linewidth=1)
    for row, pair in enumerate(pairs):
        comparison = pair.comparison
        assert comparison is not None
        low, high = comparison.ratio_ci or (comparison.ratio, comparison.ratio)
        colour = _DIRECTION_COLOURS[comparison.verdict]
        axes.errorbar([comparison.ratio], [row], xerr=[[comparison.ratio - low], [high - comparison.ratio]],
                      fmt="o", color=colour, capsize=4)
    axes.set_xscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:.3g}")
    axes.xaxis.set_major_formatter(plain)
    axes.xaxis.set_minor_formatter(plain)
    axes.tick_params(axis="x", which="minor", labelsize="small")
    axes.set_yticks(range(len(pairs)), [f"{pair.manifest}: {pair.variant}" for pair in pairs])
    axes.set_ylim(len(pairs) - 0.5, -0.5)
    axes.set_xlabel(f"time as a ratio of {results.experiment.baseline_variant.name}'s (log scale; "
                    "95% CI; green faster, red slower, grey no difference)")
    axes.set_title(f"{results.experiment.name}: each variant against the baseline", wrap=True)
    axes.grid(True, axis="x", which="both", alpha=0.3)
    _legend(axes, fontsize="small", loc="lower right")
    return figure


_PROCESS_FIGURES: tuple[tuple[str, Callable[[Cell], Summary | None]], ...] = (
    ("files/s", lambda cell: cell.files_per_second),
    ("MB/s", lambda cell: cell.throughput),
)
"""What the processes plot shows against processes: files and bytes per second (geometric means, 95% CI)."""


def _syncs(results: Results) -> list[PulpSyncVariant]:
    """The variants that are pulp-sync syncs (which `processes` can split), not programs or Pulp servers."""
    return [v for v in results.experiment.variants if isinstance(v, PulpSyncVariant)]


def _processes(results: Results, analysis: Analysis) -> Figure:
    """Files/s and MB/s against the processes a sync used, a line per downloader, one row per manifest;
    `auto` drawn as a star where it landed (the processes its runs used), programs (curl) as dashed
    levels: when more processes stop paying, and how far from the peers, shows at a glance."""
    manifests = results.experiment.manifests
    figure = Figure(figsize=(11, 3.8 * len(manifests)), layout="constrained")
    grid = figure.subplots(len(manifests), len(_PROCESS_FIGURES), squeeze=False)
    for row, manifest in enumerate(manifests):
        for column, (label, summary_of) in enumerate(_PROCESS_FIGURES):
            _processes_panel(grid[row][column], results, analysis, manifest, summary_of)
            grid[row][column].set_title(f"{manifest}: {label}")
            grid[row][column].set_ylabel(f"{label}, geometric mean, 95% CI")
    figure.suptitle(f"{results.experiment.name}: throughput against the processes one sync used")
    return figure


def _processes_panel(axes: Any, results: Results, analysis: Analysis, manifest: str,
                     summary_of: Callable[[Cell], Summary | None]) -> None:
    downloaders = sorted({variant.downloader for variant in _syncs(results)})
    for index, downloader in enumerate(downloaders):
        for auto in (False, True):
            points = sorted(point for variant in _syncs(results)
                            if variant.downloader == downloader and (str(variant.processes) == "auto") == auto
                            for point in [_point(analysis, manifest, variant.name, summary_of)] if point)
            if points:
                xs, ys, lows, highs = zip(*points, strict=True)
                errors = [[y - low for y, low in zip(ys, lows, strict=True)],
                          [high - y for y, high in zip(ys, highs, strict=True)]]
                colour = colormaps[_FAMILIES[index % len(_FAMILIES)]](0.75)
                axes.errorbar(xs, ys, yerr=errors, color=colour, capsize=3, marker="*" if auto else "o",
                              markersize=12 if auto else 6, linestyle="none" if auto else "-",
                              label=f"{downloader} (auto)" if auto else downloader)
    peers = (v for v in results.experiment.variants_of(manifest) if isinstance(v, CommandVariant))
    for index, variant in enumerate(peers):
        summary = summary_of(analysis.cell(manifest, variant.name))
        if summary is not None and summary.geometric_mean is not None:
            axes.axhline(summary.geometric_mean, color="black", linestyle=("--", ":", "-.")[index % 3],
                         label=variant.name)
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.set_xlabel("processes (as the runs used them)")
    axes.grid(True, alpha=0.3)
    _legend(axes, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _point(analysis: Analysis, manifest: str, variant: str,
           summary_of: Callable[[Cell], Summary | None]) -> tuple[float, float, float, float] | None:
    """(processes used, geometric mean, CI low, CI high) of a cell; None without counted runs, or where the
    variant does not run the manifest."""
    cell = analysis.find(manifest, variant)
    if cell is None:
        return None
    used, summary = cell.processes, summary_of(cell)
    if used is None or summary is None or summary.geometric_mean is None:
        return None
    centre = summary.geometric_mean
    low = centre if summary.ci_low is None else summary.ci_low
    high = centre if summary.ci_high is None else summary.ci_high
    return used, centre, low, high


def _timeline(results: Results) -> Figure:
    """Every run's sync time in the order made, warm-ups hollow: drift and warm-up effects show here."""
    figure = Figure(figsize=(8, 4), layout="constrained")
    axes = figure.add_subplot()
    colours = _colours(results.experiment.variants)
    for variant in results.experiment.variants:
        colour = colours[variant.name]
        for warmup in (False, True):
            runs = [(i, r.sync_seconds) for i, r in enumerate(results.runs, start=1)
                    if r.variant == variant.name and r.ok and r.warmup == warmup and r.sync_seconds is not None]
            if runs:
                xs, ys = zip(*runs, strict=True)
                axes.scatter(xs, ys, s=16, color=colour, facecolors="none" if warmup else colour,
                             label=f"{variant.name}{' (warm-up)' if warmup else ''}")
    failed = [i for i, r in enumerate(results.runs, start=1) if not r.ok]
    for i in failed:
        axes.axvline(i, color="red", alpha=0.4, linewidth=1)
    axes.set_xlabel("run, in the order made (red lines: failed runs)")
    axes.set_ylabel("sync time (s)")
    axes.set_title(f"{results.experiment.name}: runs in order", wrap=True)
    axes.grid(True, alpha=0.3)
    _legend(axes, fontsize="small", ncols=1 + len(results.experiment.variants) // 8)
    return figure


def _legend(axes: Any, **options: Any) -> None:
    """A legend of what the axes drew with a label, or none where nothing was (every run failed): matplotlib
    would warn "No artists with labels found" on stderr, a library's noise in the harness's output."""
    if axes.get_legend_handles_labels()[0]:
        axes.legend(**options)


def _save(folder: Path, name: str, figure: Figure) -> str:
    """Write `name`.png and `name`.svg; returns `name`."""
    FigureCanvasAgg(figure)
    for suffix in FORMATS:
        figure.savefig(folder / f"{name}.{suffix}", dpi=120)
    return name
