"""What the analysis adds to a results folder: results.json's statistics, a sweep's recommendations and auto's
verdicts.

The runs are the source of truth (harness.results) and know nothing of what is computed from them; after
every run, and on every `bench report`, the statistics are derived from the runs again and handed to the
results folder as data, the way hyperfine's result model is filled in without knowing who fills it.
"""

from __future__ import annotations

from pathlib import Path

from harness.analysis.auto import auto_verdicts
from harness.analysis.findings import Analysis, analyse
from harness.analysis.sweep import recommend
from harness.results.folder import Results
from harness.results.outputs import write_outputs

__all__ = ["save_run_outputs"]


def save_run_outputs(folder: Path, results: Results) -> Analysis:
    """Analyse the runs so far and write results.json (with the statistics and, for a sweep, its
    recommendations, harness.analysis.sweep.Recommendation, and auto's verdicts against the fixed values,
    harness.analysis.auto.AutoVerdict, under "auto_against_fixed"), runs.csv and every perf_data file."""
    analysis = analyse(results.experiment, results.runs)
    picks = recommend(results.experiment, analysis) if results.experiment.kind == "sweep" else None
    statistics = analysis.as_dict()
    verdicts = auto_verdicts(results.experiment, analysis)
    if verdicts:
        statistics["auto_against_fixed"] = [verdict.as_dict() for verdict in verdicts]
    write_outputs(folder, results, statistics, None if picks is None else [pick.as_dict() for pick in picks])
    return analysis
