"""Two results folders, cell by cell: did the new code (or setting) change the sync time?

Cells match on manifest and variant name. Differences in setup (scale, profile, machine) are named
first: a change measured across them is not the code's alone.

Every percentage here is one figure, the change the verdict states: (ratio − 1) × 100, the ratio of
the geometric means that the test is on (the seed's change of the arithmetic means would differ from
it on a skewed cell, and a row must not say two things). A gate (`gate_problems`) fails on what would
make a comparison pass without measuring anything: no cell in common, a cell of the old folder missing
from the new one, and failed runs in the new one; each with its own exit status and a line naming the
cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.analysis.findings import Pair, analyse
from harness.analysis.stats import Comparison, Summary, compare
from harness.report.markdown import markdown_table
from harness.report.view import Table
from harness.report.wording import ratio_sentence, verdict
from harness.results.folder import Results

__all__ = ["CellChange", "COMPARE_HEADER", "GateProblem", "compare_results", "change_rows", "change_document",
           "change_markdown", "change_percent", "gate_problems", "regressions", "regression_line",
           "setup_differences", "NO_COMMON_CELLS", "MISSING_CELLS", "FAILED_RUNS", "REGRESSION"]

COMPARE_HEADER = ("manifest", "variant", "old (s)", "new (s)", "change", "ratio", "p (Welch, logs)", "verdict")
_NOT_SETUP = ("name", "description", "variants", "manifests")
"""What an experiment's two folders may differ in and still be compared cell for cell: its name and words,
and its variants and manifests, which are compared one by one (a cell only one folder has is listed as
such). Every other setting (scale, runs, warm-ups, baseline, alpha, band, timeout, the remote...) changes
what a cell's figures mean, so each that differs is a "Differs:" line."""
_MACHINE = ("cpu_model", "cpu_count", "memory_gb", "hostname")
REGRESSION = 3
"""Exit status of `bench compare --fail-on-regression` when a cell regressed beyond the threshold."""
NO_COMMON_CELLS = 4
"""... when no manifest x variant of the old folder is in the new one: nothing was compared."""
MISSING_CELLS = 5
"""... when the new folder lacks cells the old one measured."""
FAILED_RUNS = 6
"""... when runs of the new folder failed (or a cell of it has no counted run)."""
_SHOWN = 5
"""Cells a gate line names before it counts the rest."""


@dataclass(frozen=True)
class GateProblem:
    """Why a gated comparison fails without a regression: its exit status and one line naming the cells."""

    status: int
    line: str


@dataclass(frozen=True)
class CellChange:
    """One cell in the old and the new folder; `comparison` takes old as the baseline."""

    manifest: str
    variant: str
    old: Summary | None
    new: Summary | None
    comparison: Comparison | None


def compare_results(old: Results, new: Results) -> list[CellChange]:
    """Every cell of either folder, in the new folder's order, then cells only the old one has."""
    old_cells = {(c.manifest, c.variant): c.time for c in analyse(old.experiment, old.runs).cells}
    new_cells = {(c.manifest, c.variant): c.time for c in analyse(new.experiment, new.runs).cells}
    keys = list(new_cells) + [key for key in old_cells if key not in new_cells]
    changes = []
    for manifest, variant in keys:
        before, after = _times(old, manifest, variant), _times(new, manifest, variant)
        comparison = compare(before, after, new.experiment.alpha, new.experiment.band) if before and after else None
        changes.append(CellChange(manifest, variant, old_cells.get((manifest, variant)),
                                  new_cells.get((manifest, variant)), comparison))
    return changes


def change_rows(changes: Sequence[CellChange]) -> list[tuple[str, ...]]:
    """COMPARE_HEADER rows: means, percent change, "new 1.10x faster [95% CI 1.05–1.15]", p and verdict."""
    rows: list[tuple[str, ...]] = []
    for change in changes:
        old = f"{change.old.mean:.3f}" if change.old else "–"
        new = f"{change.new.mean:.3f}" if change.new else "–"
        rows.append((change.manifest, change.variant, old, new, *_judgement(change)))
    return rows


def change_document(changes: Sequence[CellChange], notes: Sequence[str], alpha: float,
                    threshold_percent: float | None) -> dict[str, Any]:
    """`bench compare --json`: what the table shows, unformatted, so a script need not parse rich output.

    `faster` is "new" or "old"; a cell's `regression` is None when no threshold gates the comparison.
    """
    return {
        "setup_differences": list(notes),
        "alpha": alpha,
        "fail_on_regression_percent": threshold_percent,
        "cells": [_cell_document(change, threshold_percent) for change in changes],
    }


def regressions(changes: Sequence[CellChange], threshold_percent: float) -> list[CellChange]:
    """Cells that the new folder made significantly slower by more than `threshold_percent` of the old mean.

    Both conditions, as asv's `continuous` gates a CI: significant alone would fail on a real but
    negligible slowdown, a percentage alone on noise. Significant is the Comparison's: the two-sided
    p of Welch's unequal-variances t-test (Welch 1947) on the log times below the experiment's alpha
    (two folders' runs are not paired: they ran at different times). A cell missing from either
    folder, or with fewer than two runs on a side, has no test and never regresses.
    """
    return [change for change in changes if _regressed(change, threshold_percent)]


def regression_line(change: CellChange, threshold_percent: float) -> str:
    """"Regression: 100 asyncio +12.3% (p = 0.0004) beyond 5%" for one of `regressions()`."""
    comparison = change.comparison
    assert comparison is not None and comparison.p_value is not None, "only regressed cells have a line"
    return (f"Regression: {change.manifest} {change.variant} {change_percent(comparison):+.1f}% "
            f"(p = {comparison.p_value:.3g}) beyond {threshold_percent:g}%")


def change_percent(comparison: Comparison) -> float:
    """The change of time the verdict states, in percent: (ratio of the geometric means − 1) × 100."""
    return (comparison.ratio - 1) * 100


def gate_problems(old: Results, new: Results) -> list[GateProblem]:
    """What fails a gated comparison besides a regression, in order of status: no cell in common (the
    two folders measured different things, a sweep against a run), cells of OLD missing from NEW, and
    failed runs (or cells without a counted run) in NEW."""
    measured = {key for key, times in _cells(old).items() if times}
    new_cells = _cells(new)
    planned = set(new_cells)
    problems = []
    if not measured & planned:
        problems.append(GateProblem(NO_COMMON_CELLS, f"Nothing compared: no manifest x variant of OLD "
                                    f"({_names(measured)}) is in NEW ({_names(planned)})"))
    elif measured - planned:
        problems.append(GateProblem(MISSING_CELLS, f"NEW lacks cells OLD measured: {_names(measured - planned)}"))
    failing = [f"{manifest} x {variant}: {failed} of {failed + len(times)} counted runs failed"
               for (manifest, variant), times in new_cells.items()
               for failed in [_failed(new, manifest, variant)] if failed or not times]
    if failing:
        problems.append(GateProblem(FAILED_RUNS, "NEW has failed runs: " + _shown(failing)))
    return problems


def change_markdown(title: str, changes: Sequence[CellChange], notes: Sequence[str], gate: Sequence[str]) -> str:
    """`bench compare --format markdown`: the table, the setup differences and the gate's lines, for a pull
    request's comment."""
    lines = [f"### {title}", "", *markdown_table(Table(COMPARE_HEADER, tuple(change_rows(changes))))]
    lines += ["", *(f"- Differs: {note}" for note in notes)] if notes else []
    lines += ["", *(f"- **{line}**" for line in gate)] if gate else []
    return "\n".join(lines) + "\n"


def _cells(results: Results) -> dict[tuple[str, str], list[float]]:
    """Every manifest x variant the experiment planned, with its counted times."""
    spec = results.experiment
    return {(m, v.name): _times(results, m, v.name) for m, v in spec.cells}


def _failed(results: Results, manifest: str, variant: str) -> int:
    return sum(1 for r in results.runs if r.manifest == manifest and r.variant == variant and not r.ok
               and not r.warmup)


def _names(cells: set[tuple[str, str]]) -> str:
    return _shown([f"{manifest} x {variant}" for manifest, variant in sorted(cells)]) or "none"


def _shown(items: Sequence[str]) -> str:
    more = f"; and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return "; ".join(items[:_SHOWN]) + more


def setup_differences(old: Results, new: Results) -> list[str]:
    """Settings and machine facts that differ between the two folders, as sentences."""
    old_spec, new_spec = old.experiment.as_dict(), new.experiment.as_dict()
    notes = [f"{key}: {old_spec.get(key)!r} -> {value!r}" for key, value in new_spec.items()
             if key not in _NOT_SETUP and old_spec.get(key) != value]
    old_variants = {v["name"]: v for v in old_spec["variants"]}
    for variant in new_spec["variants"]:
        before = old_variants.get(variant["name"], variant)
        notes += [f"variant {variant['name']} {key}: {before.get(key)!r} -> {variant.get(key)!r}"
                  for key in dict.fromkeys([*variant, *before]) if before.get(key) != variant.get(key)]
    old_machine, new_machine = old.environment.get("machine", {}), new.environment.get("machine", {})
    notes += [f"machine {key}: {old_machine.get(key)!r} -> {new_machine.get(key)!r}"
              for key in _MACHINE if old_machine.get(key) != new_machine.get(key)]
    old_commit, new_commit = (r.environment.get("git", {}).get("commit") for r in (old, new))
    if old_commit != new_commit:
        notes.append(f"commit: {str(old_commit)[:10]} -> {str(new_commit)[:10]} (expected when comparing code)")
    return notes


def _times(results: Results, manifest: str, variant: str) -> list[float]:
    return [r.sync_seconds for r in results.runs
            if r.manifest == manifest and r.variant == variant and r.counted and r.sync_seconds is not None]


def _regressed(change: CellChange, threshold_percent: float) -> bool:
    comparison = change.comparison
    return comparison is not None and comparison.significant and change_percent(comparison) > threshold_percent


def _cell_document(change: CellChange, threshold_percent: float | None) -> dict[str, Any]:
    """One cell of change_document(): mean seconds (None where a folder lacks the cell) and the test."""
    comparison = change.comparison
    document: dict[str, Any] = {
        "manifest": change.manifest,
        "variant": change.variant,
        "old_mean_seconds": change.old.mean if change.old else None,
        "new_mean_seconds": change.new.mean if change.new else None,
        "percent_change": None, "ratio": None, "ratio_ci": None, "faster": None,
        "p_value": None, "significant": None, "verdict": None,
    }
    if comparison is not None:
        document.update(comparison.as_dict(), faster="new" if comparison.faster == "variant" else "old",
                        percent_change=change_percent(comparison))
    document["verdict_text"] = _verdict(change)
    document["regression"] = None if threshold_percent is None else _regressed(change, threshold_percent)
    return document


def _verdict(change: CellChange) -> str:
    """The verdict in words (new against old), or which folder lacks the cell when one does."""
    if change.comparison is None:
        return "only in new" if change.old is None else "only in old" if change.new is None else "no runs"
    return verdict(change.comparison)


def _judgement(change: CellChange) -> tuple[str, str, str, str]:
    """(change, ratio, p, verdict) of one cell; says which folder lacks it when one does."""
    comparison = change.comparison
    if comparison is None:
        return "–", "–", "–", _verdict(change)
    pair = Pair(change.manifest, "new", "old", comparison)
    p_value = "–" if comparison.p_value is None else f"{comparison.p_value:.3g}"
    return f"{change_percent(comparison):+.1f}%", ratio_sentence(pair), p_value, _verdict(change)
