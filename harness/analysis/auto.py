"""auto against the fixed settings: whether finding the concurrency while syncing (`download_concurrency =
"auto"`, issue 35) costs time against the values a sweep tries by hand, on each link it ran on.

In a sweep of download_concurrency that holds auto variants, harness.analysis.findings pairs each one with every
fixed variant of its group (one engine on one profile, Experiment.group_of) on each manifest both run: round by
round, the paired t-test on the log times, Holm-adjusted with the experiment's other tests (Analysis.auto_pairs).
Here each auto variant's row per manifest reads them against the issue's targets:

- the best fixed value (the fastest median time): auto's time ratio to it at most 1 + AUTO_BEST_SLOWER at the
  upper end of its 95% interval; on a remote that limits connections (a profile's `max_connections`), the best
  of the values at or below the limit, within 1 + AUTO_LIMITED_SLOWER (auto meets the limit by being refused
  above it, which a fixed value at the limit never is);
- the default fixed value (defaults.CONCURRENCY, when the sweep tried it): at most 1 + AUTO_DEFAULT_SLOWER there;
- where auto and the best fixed value are indistinguishable (the verdict "no difference"), fewer connections:
  where auto settled (the median of its runs' `concurrency`) below the best value.

The upper end of the interval and not the ratio itself, so that a target is met only where the runs show it:
with few or noisy rounds the interval is wide and the target not met, however close the ratio.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from harness import defaults
from harness.analysis.findings import Analysis, Pair
from harness.analysis.stats import Comparison
from harness.experiment.spec import Experiment
from harness.results.records import RunRecord, Trajectory

__all__ = ["AutoVerdict", "AutoRuns", "auto_verdicts", "auto_runs", "steps"]


@dataclass(frozen=True)
class AutoVerdict:
    """One auto variant on one manifest against the fixed variants of its group (`group`, as sweep curves are
    named). `best_fixed` is the fixed variant with the fastest median time, `best_value` its concurrency, and
    `against_best` auto's comparison with it (its `ratio` is auto's time over the fixed one's); `default_tried`
    whether the sweep ran the default concurrency (`default_value`), and `against_default` auto's comparison
    with it. `settled` is the median of auto's counted runs' `concurrency`, `failed` its failed counted runs;
    None and zero without them. The targets' tolerances are `best_slower` and `default_slower`; `limit` is the
    remote's connection limit, if it has one (the best is then the best at or below it). `label` names the row:
    its group, and its variant too where the group has more than one auto variant on the manifest."""

    manifest: str
    group: str
    variant: str
    best_fixed: str | None
    best_value: int | None
    against_best: Comparison | None
    default_value: int
    default_tried: bool
    against_default: Comparison | None
    settled: float | None
    failed: int
    label: str
    limit: int | None = None
    best_slower: float = defaults.AUTO_BEST_SLOWER
    default_slower: float = defaults.AUTO_DEFAULT_SLOWER

    @property
    def within_best(self) -> bool | None:
        """Whether auto's time is at most 1 + best_slower times the best fixed one's at the upper end of the
        interval; None without an interval (fewer than 2 rounds a side)."""
        return _within(self.against_best, self.best_slower)

    @property
    def within_default(self) -> bool | None:
        """The same against the default fixed value, within default_slower; None without an interval, and
        where the sweep did not try the default (`default_tried`: the target does not apply)."""
        return _within(self.against_default, self.default_slower)

    @property
    def fewer_connections(self) -> bool | None:
        """Where auto's time and the best fixed one's are indistinguishable (a test, and "no difference"),
        whether auto settled below the best value; None where the target does not apply (their times differ,
        or there is no test) or auto has no runs to have settled."""
        comparison = self.against_best
        if comparison is None or comparison.p_value is None or comparison.verdict != "no difference":
            return None
        if self.settled is None or self.best_value is None:
            return None
        return self.settled < self.best_value

    @property
    def met(self) -> bool | None:
        """The targets together: False when one that applies is missed, None when one that applies cannot be
        judged yet (no interval), True when every one that applies is met."""
        applying = [self.within_best, *([self.within_default] if self.default_tried else [])]
        if self.fewer_connections is not None:
            applying.append(self.fewer_connections)
        if False in applying:
            return False
        return None if None in applying else True

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with each target's outcome and `met`."""
        data = asdict(self)
        data["against_best"] = self.against_best.as_dict() if self.against_best else None
        data["against_default"] = self.against_default.as_dict() if self.against_default else None
        return dict(data, within_best=self.within_best, within_default=self.within_default,
                    fewer_connections=self.fewer_connections, met=self.met)


def _within(comparison: Comparison | None, slower: float) -> bool | None:
    """Whether the upper end of the time ratio's interval is at most 1 + `slower`; None without one."""
    if comparison is None or comparison.ratio_ci is None:
        return None
    return comparison.ratio_ci[1] <= 1 + slower


def auto_verdicts(experiment: Experiment, analysis: Analysis) -> list[AutoVerdict]:
    """A row per auto variant and manifest it runs with fixed variants of its group beside it (none outside a
    sweep of download_concurrency), in the experiment's order."""
    verdicts = []
    for manifest, variant in experiment.cells:
        pairs = [pair for pair in analysis.auto_pairs if (pair.manifest, pair.variant) == (manifest, variant.name)]
        if pairs:
            verdicts.append(_verdict(experiment, analysis, pairs))
    rows = collections.Counter((verdict.manifest, verdict.group) for verdict in verdicts)
    return [dataclasses.replace(verdict, label=f"{verdict.group}, {verdict.variant}")
            if rows[verdict.manifest, verdict.group] > 1 else verdict for verdict in verdicts]


def _verdict(experiment: Experiment, analysis: Analysis, pairs: Sequence[Pair]) -> AutoVerdict:
    """One auto variant's row on one manifest from its pairs with the fixed variants of its group."""
    manifest, auto = pairs[0].manifest, experiment.variant(pairs[0].variant)
    by_value = {_fixed_value(experiment, pair.baseline): pair for pair in pairs}
    limit = experiment.connection_limit_of(auto)
    timed = [(time.median, value) for value, pair in by_value.items()
             if (time := analysis.cell(manifest, pair.baseline).time) is not None and (limit is None or value <= limit)]
    best_value = min(timed)[1] if timed else None
    best = by_value[best_value] if best_value is not None else None
    default = by_value.get(defaults.CONCURRENCY)
    cell = analysis.cell(manifest, auto.name)
    return AutoVerdict(
        manifest=manifest, group=experiment.group_of(auto), variant=auto.name,
        best_fixed=best.baseline if best else None, best_value=best_value,
        against_best=best.comparison if best else None, default_value=defaults.CONCURRENCY,
        default_tried=default is not None, against_default=default.comparison if default else None,
        settled=cell.concurrency, failed=cell.failed, label=experiment.group_of(auto), limit=limit,
        best_slower=defaults.AUTO_BEST_SLOWER if limit is None else defaults.AUTO_LIMITED_SLOWER)


def _fixed_value(experiment: Experiment, name: str) -> int:
    """The concurrency of the fixed variant called `name`."""
    concurrency = experiment.variant(name).download_concurrency
    assert isinstance(concurrency, int), "auto is paired with fixed variants only (findings._auto_pairs)"
    return concurrency


class AutoRuns(NamedTuple):
    """The counted runs of one auto variant on one manifest, as the plot of auto's concurrency draws them:
    each run's limit over time (its trajectory) and its sync seconds."""

    group: str
    manifest: str
    variant: str
    runs: tuple[tuple[Trajectory, float | None], ...]


def auto_runs(experiment: Experiment, runs: Sequence[RunRecord]) -> list[AutoRuns]:
    """Per auto variant and manifest, its counted runs that recorded how their limit moved; none where no run
    did (a downloader that keeps no record, or no auto variant)."""
    found = []
    for manifest, variant in experiment.cells:
        recorded = tuple((run.concurrency_trajectory, run.sync_seconds) for run in runs
                         if (run.manifest, run.variant) == (manifest, variant.name) and run.counted
                         and run.concurrency_trajectory)
        if variant.auto_concurrency and recorded:
            found.append(AutoRuns(experiment.group_of(variant), manifest, variant.name, recorded))
    return found


def steps(trajectory: Trajectory, end: float | None) -> tuple[list[float], list[int]]:
    """A trajectory as a step line's points, held after each change: its seconds and limits, and the last
    limit again at `end` (the run's end, where it is after the last change), so the line shows where the run
    stayed until it ended."""
    seconds, limits = [moment for moment, _ in trajectory], [limit for _, limit in trajectory]
    if end is not None and end > seconds[-1]:
        seconds.append(end)
        limits.append(limits[-1])
    return seconds, limits
