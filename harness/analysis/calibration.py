"""Calibration: how often this machine's noise fools the verdict, and how small a difference it lets through.

`bench calibrate` runs K A/A experiments (one variant against an exact copy of itself, interleaved as
every experiment is) and counts the comparisons called "faster" or "slower": every one is a false
alarm. It also keeps each manifest's typical coefficient of variation and minimum detectable effect
(harness.analysis.stats). The result is stored beside the results folders as calibration.json; the report of
a later experiment on the same machine quotes it, and says when it is old or was made elsewhere.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from harness.analysis.findings import Analysis
from harness.experiment.spec import Experiment
from harness.results.folder import atomic_write_text

__all__ = ["Calibration", "CALIBRATION_FILE", "a_a_experiment", "calibrate", "save", "load", "quote"]

CALIBRATION_FILE = "calibration.json"
_OLD_DAYS = 30
"""A calibration older than this is quoted with its age: the machine may have changed since."""
_SAME_MACHINE = ("hostname", "cpu_model", "cpu_count")


@dataclass(frozen=True)
class Calibration:
    """What K A/A experiments found on one machine. `cv` and `mde_percent` are medians per manifest."""

    made_at: str
    made_at_epoch: float
    machine: dict[str, Any]
    setup: dict[str, Any]
    experiments: int
    comparisons: int
    false_alarms: int
    cv: dict[str, float | None]
    mde_percent: dict[str, float | None]

    @property
    def false_alarm_rate(self) -> float:
        return self.false_alarms / self.comparisons if self.comparisons else 0.0

    def sentence(self) -> str:
        """"8 A/A experiments (16 comparisons): 1 false alarm (6%); CV 100: 3.1%, ...; a difference below ..."."""
        cvs = ", ".join(f"{m}: {'–' if v is None else f'{v:.1%}'}" for m, v in self.cv.items())
        mdes = ", ".join(f"{m}: {'–' if v is None else f'{v:.1f}%'}" for m, v in self.mde_percent.items())
        return (f"{self.experiments} A/A experiments ({self.comparisons} comparisons): {self.false_alarms} called "
                f"different ({self.false_alarm_rate:.0%}, expected at most {self.setup['alpha']:.0%}); typical CV "
                f"{cvs}; smallest difference detected four times in five: {mdes}")


def a_a_experiment(experiment: Experiment, number: int) -> Experiment:
    """The `number`th A/A experiment: the spec's baseline variant against an exact copy of itself."""
    baseline = experiment.baseline_variant
    twin = replace(baseline, name=f"{baseline.name}-again")
    return experiment.with_overrides(name=f"calibration-{number}", variants=(baseline, twin), baseline=baseline.name)


def calibrate(experiment: Experiment, analyses: Sequence[Analysis], machine: dict[str, Any]) -> Calibration:
    """The calibration from the analyses of the A/A experiments made from `experiment`."""
    comparisons = [pair.comparison for analysis in analyses for pair in analysis.pairs if pair.comparison]
    now = time.time()
    return Calibration(
        made_at=time.strftime("%Y-%m-%d %H:%M", time.localtime(now)),
        made_at_epoch=now,
        machine={key: machine.get(key) for key in _SAME_MACHINE},
        setup={"scale": experiment.scale, "profile": experiment.profile, "runs": experiment.runs,
               "downloader": experiment.baseline_variant.engine, "alpha": experiment.alpha},
        experiments=len(analyses),
        comparisons=len(comparisons),
        false_alarms=sum(c.verdict != "no difference" for c in comparisons),
        cv={m: _median([c.time.cv for a in analyses for c in a.cells if c.manifest == m and c.time])
            for m in experiment.manifests},
        mde_percent={m: _median([p.comparison.mde_percent for a in analyses for p in a.pairs
                                 if p.manifest == m and p.comparison]) for m in experiment.manifests},
    )


def save(results_dir: Path, calibration: Calibration) -> Path:
    """Write calibration.json in `results_dir`, replacing the one before; its path."""
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / CALIBRATION_FILE
    atomic_write_text(path, json.dumps(asdict(calibration), indent=2) + "\n")
    return path


def load(results_dir: Path) -> Calibration | None:
    """The calibration stored in `results_dir`; None when there is none or it cannot be read."""
    try:
        return Calibration(**json.loads((results_dir / CALIBRATION_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def quote(calibration: Calibration | None, machine: dict[str, Any], now: float | None = None) -> str:
    """The calibration as the report quotes it, with a caveat when it is old or from another machine."""
    if calibration is None:
        return ("No calibration on this machine: `pulp-sync bench calibrate` measures how often its noise fools "
                "a verdict.")
    caveats = []
    if any(calibration.machine.get(key) != machine.get(key) for key in _SAME_MACHINE):
        caveats.append(f"made on another machine ({calibration.machine.get('hostname')}, "
                       f"{calibration.machine.get('cpu_model')}): it says little about this one")
    days = ((now or time.time()) - calibration.made_at_epoch) / 86400
    if days > _OLD_DAYS:
        caveats.append(f"{days:.0f} days old: calibrate again")
    setup = calibration.setup
    where = f"scale {setup['scale']:g}, profile {setup['profile']}, {setup['runs']} runs, {setup['downloader']}"
    caveat = f" Caution: {'; '.join(caveats)}." if caveats else ""
    return f"Calibration of {calibration.made_at} ({where}): {calibration.sentence()}.{caveat}"


def _median(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None
