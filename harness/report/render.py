"""Render a results folder: summary.md, the plots, and report.html, all from results.json.

`bench run` and `bench sweep` call this at their end; `bench report DIR` calls it again at any time
(after an interrupted run, or after a harness upgrade), so what is shown always matches the runs.
The results are shaped once into a ReportView (harness.report.view); each output only renders it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.analysis.derived import save_run_outputs
from harness.analysis.findings import Analysis
from harness.analysis.sweep import auto_lines, setting_label, sweep_lines
from harness.report.html import report_html
from harness.report.markdown import summary_markdown
from harness.report.plots import plot_experiment, plot_sweep
from harness.report.view import REPORT_FILE, SUMMARY_FILE, ReportView, build_view
from harness.results.folder import Results, atomic_write_text, load_results

__all__ = ["Rendered", "render", "REPORT_FILE", "SUMMARY_FILE"]


@dataclass(frozen=True)
class Rendered:
    """What `render` produced: the results it read, their analysis, and the view every output showed."""

    folder: Path
    results: Results
    analysis: Analysis
    view: ReportView

    @property
    def plots(self) -> tuple[str, ...]:
        """The plots' base names (each a .png and an .svg in the folder)."""
        return self.view.plots

    @property
    def report(self) -> Path:
        """Path of report.html."""
        return self.folder / REPORT_FILE


def render(folder: Path) -> Rendered:
    """Re-derive every output of `folder` from its results.json."""
    results = load_results(folder)
    analysis = save_run_outputs(folder, results)
    plots = [*plot_experiment(folder, results, analysis), *_sweep_plots(folder, results, analysis)]
    view = build_view(results, analysis, folder, plots)
    atomic_write_text(folder / SUMMARY_FILE, summary_markdown(view))
    atomic_write_text(folder / REPORT_FILE, report_html(view))
    return Rendered(folder, results, analysis, view)


def _sweep_plots(folder: Path, results: Results, analysis: Analysis) -> list[str]:
    """A sweep's plot per manifest (none for other experiments): throughput against the swept setting, auto
    variants as levels across it."""
    spec = results.experiment
    if spec.kind != "sweep":
        return []
    label = setting_label(spec.sweep_setting)
    plots = []
    for manifest in spec.manifests:
        title = f"{spec.name}: throughput against {label}, manifest {manifest}"
        name = "sweep" if len(spec.manifests) == 1 else f"sweep_{manifest.replace('/', '_')}"
        plots.append(plot_sweep(folder, sweep_lines(spec, analysis, manifest), title, name, spec.sweep_setting,
                                auto_lines(spec, analysis, manifest)))
    return plots
