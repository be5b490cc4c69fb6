"""Render a results folder: summary.md, the plots, and report.html, all from results.json.

`bench run` and `bench sweep` call this at their end; `bench report DIR` calls it again at any time
(after an interrupted run, or after a harness upgrade), so what is shown always matches the runs.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from html import escape
from importlib import resources
from pathlib import Path
from string import Template

from harness.analysis import calibration
from harness.analysis.findings import Analysis, Pair
from harness.analysis.sweep import recommend, setting_label, sweep_lines
from harness.report import summary
from harness.report.plots import plot_experiment, plot_sweep
from harness.results.folder import Results, atomic_write_text, load_results
from harness.results.outputs import perf_data_name, save_run_outputs
from harness.results.records import RUN_FIELDS
from harness.warning import FigureWarning

__all__ = ["Rendered", "render", "REPORT_FILE", "SUMMARY_FILE"]

REPORT_FILE = "report.html"
SUMMARY_FILE = "summary.md"


class Rendered:
    """What `render` produced: the results it read, their analysis, and the plot names."""

    def __init__(self, folder: Path, results: Results, analysis: Analysis, plots: list[str]) -> None:
        self.folder, self.results, self.analysis, self.plots = folder, results, analysis, plots

    @property
    def report(self) -> Path:
        """Path of report.html."""
        return self.folder / REPORT_FILE


def render(folder: Path) -> Rendered:
    """Re-derive every output of `folder` from its results.json."""
    results = load_results(folder)
    analysis = save_run_outputs(folder, results)
    plots = plot_experiment(folder, results, analysis)
    markdown = summary.summary_markdown(results, analysis)
    spec = results.experiment
    if spec.kind == "sweep":
        label = setting_label(spec.sweep_setting)
        for manifest in spec.manifests:
            title = f"{spec.name}: throughput against {label}, manifest {manifest}"
            name = "sweep" if len(spec.manifests) == 1 else f"sweep_{manifest.replace('/', '_')}"
            plots.append(plot_sweep(folder, sweep_lines(spec, analysis, manifest), title, name, spec.sweep_setting))
    atomic_write_text(folder / SUMMARY_FILE, markdown)
    atomic_write_text(folder / REPORT_FILE, _html(folder, results, analysis, plots))
    return Rendered(folder, results, analysis, plots)


def _html(folder: Path, results: Results, analysis: Analysis, plots: Sequence[str]) -> str:
    spec = results.experiment
    page = resources.files("harness.report").joinpath("templates", "report.html")
    template = Template(page.read_text(encoding="utf-8"))
    return template.substitute(
        title=escape(f"{spec.name}: pulp-sync benchmark report"),
        setup=escape(summary.setup_line(results)) + escape(_when(results))
        + "".join(f"<br>{escape(line)}" for line in summary.source_lines(results)),
        description=escape(spec.description),
        headline=_headline(results, analysis),
        warnings=_warnings(summary.all_warnings(results, analysis)),
        mean_table=_table(*summary.matrix(results, analysis, "mean")),
        stdev_table=_table(*summary.matrix(results, analysis, "stdev")),
        cell_table=_table(summary.TIME_HEADER, summary.time_rows(analysis)),
        pair_section=_pair_section(results, analysis) + _calibration(folder, results),
        resource_table=_table(summary.RESOURCE_HEADER, summary.resource_rows(analysis)),
        overhead=escape(summary.overhead_line(analysis)),
        sweep=_sweep_section(results, analysis),
        plots="\n".join(_figure(folder, name) for name in plots),
        failed=_failed_section(results),
        run_count=str(len(results.runs)),
        run_table=_table(RUN_FIELDS, [[_cell_text(v) for v in run.as_dict().values()] for run in results.runs]),
        environment=_environment(results),
        files=_files(results),
    )


def _when(results: Results) -> str:
    finished = results.finished_at or "not finished (interrupted? continue with --resume)"
    return f". Started {results.started_at}, finished {finished}, {results.elapsed_seconds / 60:.1f} min in all."


def _headline(results: Results, analysis: Analysis) -> str:
    """One line per pair, coloured by the verdict's direction (faster green, slower red, no difference
    grey), then the conclusions."""
    items = []
    for pair, row in zip(analysis.pairs, summary.pair_rows(analysis), strict=True):
        _, _, change, sentence, p_value, _, verdict = row
        items.append(f"<li>{escape(pair.manifest)}: {escape(sentence)} ({escape(change)} time, Holm-adjusted p = "
                     f"{escape(p_value)}, <span class=\"{_direction(pair)}\">{escape(verdict)}</span>)</li>")
    conclusions = summary.average_sentence(analysis, results.experiment.baseline_variant.name)
    conclusions += summary.peer_sentences(analysis)
    conclusions += summary.sweep_sentences(results.experiment, analysis)
    items += [f"<li><b>{escape(line)}</b></li>" for line in conclusions]
    return "<ul class=\"headline\">" + "".join(items) + "</ul>" if items else "<p>One variant: nothing to compare.</p>"


def _direction(pair: Pair) -> str:
    """The CSS class of a pair's verdict: "faster", "slower" or "no-difference"."""
    return pair.comparison.verdict.replace(" ", "-") if pair.comparison else "no-difference"


def _calibration(folder: Path, results: Results) -> str:
    """The machine's calibration (harness.analysis.calibration), stored beside the results folders, as a paragraph."""
    if not results.experiment.variants[1:]:
        return ""
    stored = calibration.load(folder.resolve().parent)
    return f"<p class=\"calibration\">{escape(calibration.quote(stored, results.environment.get('machine', {})))}</p>"


def _pair_section(results: Results, analysis: Analysis) -> str:
    if not analysis.pairs:
        return ""
    title = f"<h3>Against the baseline, {escape(results.experiment.baseline_variant.name)}</h3>"
    return title + _table(summary.PAIR_HEADER, summary.pair_rows(analysis))


def _sweep_section(results: Results, analysis: Analysis) -> str:
    if results.experiment.kind != "sweep":
        return ""
    spec = results.experiment
    picks = recommend(spec, analysis)
    note = (f"<p>Recommended: the smallest {escape(spec.sweep_setting)} whose throughput (geometric mean) is "
            f"within {spec.tolerance:.0%} of the best, unless the runs cannot tell the values apart "
            f"(\"indistinguishable\": a value has fewer than 2 counted runs, or the best value's sync times are "
            f"not significantly shorter than the worst one's, Welch's t-test with a Bonferroni correction for "
            f"the pairs of values, p ≥ {spec.alpha:g}). Also in results.json, \"recommendations\".</p>"
            ) if picks else "<p>No successful runs.</p>"
    table = _table(summary.SWEEP_HEADER, summary.sweep_rows(picks))
    return f"<section id=\"sweep\"><h2>Sweep of {escape(setting_label(spec.sweep_setting))}</h2>{note}{table}</section>"


def _failed_section(results: Results) -> str:
    failed = [run for run in results.runs if not run.ok]
    if not failed:
        return ""
    header = ("manifest", "variant", "round", "warm-up", "error")
    rows = [(r.manifest, r.variant, str(r.round), "yes" if r.warmup else "no", r.error or "") for r in failed]
    return (f"<section class=\"failed\" id=\"failed\"><h2>Failed runs ({len(failed)})</h2>"
            f"<p>Kept here and in runs.csv; never averaged in.</p>{_table(header, rows)}</section>")


def _warnings(warnings: Sequence[FigureWarning]) -> str:
    if not warnings:
        return ""
    items = "".join(f"<li class=\"{w.kind}\">" + (f"<b>{escape(w.subject)}</b>: " if w.subject else "")
                    + f"{escape(w.text)}</li>" for w in warnings)
    return f"<section class=\"warnings\" id=\"warnings\"><h2>Warnings</h2><ul>{items}</ul></section>"


def _figure(folder: Path, name: str) -> str:
    """The plot embedded as a data: URI, so that report.html alone, copied anywhere or attached to a
    ticket, shows every plot; the PNG and SVG files beside it are linked for a closer look."""
    embedded = base64.b64encode((folder / f"{name}.png").read_bytes()).decode("ascii")
    return (f"<figure><img src=\"data:image/png;base64,{embedded}\" alt=\"{escape(name)}\">"
            f"<figcaption>{escape(name)}: <a href=\"{name}.png\">PNG</a>, "
            f"<a href=\"{name}.svg\">SVG</a> (in the results folder)</figcaption></figure>")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell_text(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def _environment(results: Results) -> str:
    facts = json.dumps(results.environment, indent=2)
    spec = json.dumps(results.experiment.as_dict(), indent=2)
    return f"<h3>Machine, packages, commit</h3><pre>{escape(facts)}</pre><h3>Spec</h3><pre>{escape(spec)}</pre>"


def _files(results: Results) -> str:
    names = ["results.json", "runs.csv", SUMMARY_FILE]
    names += [perf_data_name(v.name, m) for m in results.experiment.manifests for v in results.experiment.variants]
    return ", ".join(f"<a href=\"{escape(name)}\">{escape(name)}</a>" for name in names)
