"""The results folder and its source of truth, results.json: the spec, every run, the environment.

Everything else in the folder (runs.csv, perf_data, summary.md, plots, report.html) is derived from
results.json and can be re-rendered from it (`bench report DIR`). It is replaced atomically after
every run, so an interrupted experiment loses at most the run in flight.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.experiment.spec import Experiment, experiment_from_record
from harness.results.records import RunRecord, record_from_dict

__all__ = [
    "RESULTS_FILE",
    "Results",
    "ResultsError",
    "new_results_dir",
    "latest_results_dir",
    "save_results",
    "load_results",
    "atomic_write_text",
    "now_iso",
]

RESULTS_FILE = "results.json"
FORMAT = 1
"""Version of results.json's layout, for readers of old folders."""


class ResultsError(HarnessError, ValueError):
    """A folder that is not (or not yet) a results folder."""


@dataclass
class Results:
    """An experiment's spec, its runs so far, and where it ran. `manifests` holds each manifest's
    number of files and bytes, and for a remote's manifest its public `url`, for a sampled one the
    `sample` drawn (harness.run.fixture_site.ManifestSource.facts); `elapsed_seconds` is the harness's
    wall time over all sessions."""

    experiment: Experiment
    runs: list[RunRecord] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)
    started_at: str = ""
    finished_at: str | None = None
    elapsed_seconds: float = 0.0


def now_iso() -> str:
    """Local time with its offset, to the second: when something happened, readable and sortable."""
    return datetime.now().astimezone().isoformat(timespec="seconds")


def new_results_dir(base: Path, name: str) -> Path:
    """A new `base/<timestamp>-<name>` folder; a suffix keeps two starts in one second apart."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for attempt in range(100):
        folder = base / (f"{stamp}-{name}" if attempt == 0 else f"{stamp}-{name}-{attempt}")
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            continue
    raise ResultsError(f"could not make a new folder for {name} under {base}")


def latest_results_dir(base: Path, name: str) -> Path | None:
    """The newest `base/<timestamp>-<name>` folder holding results.json, for --resume."""
    pattern = re.compile(rf"^\d{{8}}-\d{{6}}-{re.escape(name)}(-\d+)?$")
    found = [d for d in base.glob(f"*-{name}*") if pattern.match(d.name) and (d / RESULTS_FILE).is_file()]
    return max(found, key=lambda d: d.name, default=None)


def save_results(folder: Path, results: Results, statistics: dict[str, Any],
                 recommendations: list[dict[str, Any]] | None = None) -> None:
    """Write results.json (raw runs plus the statistics derived from them), atomically; a sweep's
    also holds its "recommendations", for scripts to read. Both are the analysis's (harness.analysis.derived)
    and come in as data: the source of truth does not depend on what is computed from it."""
    document = {
        "format": FORMAT,
        "experiment": results.experiment.as_dict(),
        "started_at": results.started_at,
        "finished_at": results.finished_at,
        "elapsed_seconds": results.elapsed_seconds,
        "environment": results.environment,
        "manifests": results.manifests,
        "runs": [run.as_dict() for run in results.runs],
        "statistics": statistics,
    }
    if recommendations is not None:
        document["recommendations"] = recommendations
    atomic_write_text(folder / RESULTS_FILE, json.dumps(document, indent=2))


def load_results(folder: Path) -> Results:
    """Read a results folder back; the statistics are recomputed from the runs, never trusted."""
    path = folder / RESULTS_FILE
    if not path.is_file():
        raise ResultsError(f"{folder} holds no {RESULTS_FILE}; is it a folder made by `bench run`?")
    try:
        document = json.loads(path.read_text())
        return Results(
            experiment=experiment_from_record(document["experiment"]),
            runs=[record_from_dict(run) for run in document["runs"]],
            environment=document.get("environment", {}),
            manifests=document.get("manifests", {}),
            started_at=document.get("started_at", ""),
            finished_at=document.get("finished_at"),
            elapsed_seconds=document.get("elapsed_seconds", 0.0),
        )
    except (ValueError, KeyError, TypeError) as error:
        raise ResultsError(f"{path} is damaged or from an unknown harness: {error}") from error


def atomic_write_text(path: Path, text: str) -> None:
    """Replace `path` with `text` in one step (temp file + fsync + rename): never half a file. It gets the
    mode any new file gets (the umask's), as the plots do: a results folder holds no secret, and one mode
    for all of it lets a colleague or a web server read the report as well as its pictures (a temp file
    alone would be owner-only)."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as handle:
        handle.write(text)
        handle.flush()
        os.fchmod(handle.fileno(), _new_file_mode())
        os.fsync(handle.fileno())
    os.replace(handle.name, path)


def _new_file_mode() -> int:
    """0666 less the umask: the mode open() gives a file it creates. The umask is read by setting it and
    setting it back, the one way POSIX offers."""
    umask = os.umask(0o077)
    os.umask(umask)
    return 0o666 & ~umask
