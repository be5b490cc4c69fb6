"""The files written after every run: results.json, runs.csv and the seed's perf_data files.

Each is rewritten whole and atomically from the runs so far, so a crash between two runs leaves a
complete, consistent folder; `bench run --resume` and `bench report` start from it.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from harness.results.folder import Results, atomic_write_text, save_results
from harness.results.records import RUN_FIELDS

__all__ = ["write_outputs", "perf_data_name", "runs_csv", "perf_data"]


def write_outputs(folder: Path, results: Results, statistics: dict[str, Any],
                  recommendations: list[dict[str, Any]] | None = None) -> None:
    """Write results.json (with the analysis's `statistics` and `recommendations`, as save_results takes
    them), runs.csv and the perf_data file of every cell the experiment runs."""
    save_results(folder, results, statistics, recommendations)
    atomic_write_text(folder / "runs.csv", runs_csv(results))
    for manifest, variant in results.experiment.cells:
        atomic_write_text(folder / perf_data_name(variant.name, manifest), perf_data(results, variant.name, manifest))


def perf_data_name(variant: str, manifest: str) -> str:
    """perf_data_<variant>_<manifest>.txt: the seed kept one perf_data.txt per downloader and manifest."""
    return f"perf_data_{variant}_{manifest.replace('/', '_')}.txt"


def runs_csv(results: Results) -> str:
    """Every run, warm-ups and failures included, one row each, in the order they were made."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=RUN_FIELDS, lineterminator="\n")
    writer.writeheader()
    for run in results.runs:
        writer.writerow({key: "" if value is None else value for key, value in run.as_dict().items()})
    return buffer.getvalue()


def perf_data(results: Results, variant: str, manifest: str) -> str:
    """The counted runtimes of one cell in seconds, one per line, as the seed's perftest.sh wrote them."""
    times = [r.sync_seconds for r in results.runs if r.variant == variant and r.manifest == manifest and r.counted]
    return "".join(f"{seconds:.3f}\n" for seconds in times)
