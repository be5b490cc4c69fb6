"""Findings in words: the numbers, sentences and table rows every output shows, each written once.

hyperfine's ratio sentence, the three-way verdict, the seed's Data Summary matrices and the setup
line are worded here and nowhere else, so the terminal, summary.md, report.html (through
harness.report.view) and `bench compare` (harness.analysis.compare) always say the same thing.
"""

from __future__ import annotations

from collections.abc import Collection

from harness.analysis.auto import AutoVerdict
from harness.analysis.findings import Analysis, Cell, Pair
from harness.analysis.stats import AverageChange, Comparison, bootstrap_min_rounds
from harness.analysis.sweep import Recommendation, value_text
from harness.defaults import (
    AUTO_BEST_SLOWER,
    AUTO_DEFAULT_SLOWER,
    AUTO_LIMITED_SLOWER,
    CONCURRENCY,
    CONFIDENCE,
    RESOLVE,
)
from harness.experiment.operator_remote import public_url
from harness.experiment.plan import human_bytes
from harness.results.folder import Results
from harness.results.records import RunRecord

__all__ = [
    "TIME_HEADER",
    "PAIR_HEADER",
    "RESOURCE_HEADER",
    "SWEEP_HEADER",
    "AUTO_HEADER",
    "AUTO_TARGETS",
    "FAILED_HEADER",
    "fmt",
    "p_text",
    "setup_line",
    "when_line",
    "source_lines",
    "ratio_sentence",
    "verdict",
    "direction",
    "average_sentences",
    "disagreement_lines",
    "peer_sentences",
    "overhead_line",
    "split_lines",
    "matrix",
    "time_row",
    "resource_row",
    "sweep_row",
    "auto_row",
    "auto_sentence",
    "failed_row",
    "run_row",
]

TIME_HEADER = ("manifest", "variant", "n", "mean ± σ (s)", "95% CI (s)", "min … max (s)", "MB/s (geo. mean)",
               "files/s (geo. mean)", "failed")
CONFIDENCE_LABEL = f"{CONFIDENCE:.0%} CI"
"""How every interval is labelled: one level everywhere (defaults.CONFIDENCE)."""
PAIR_HEADER = ("manifest", "variant", "change", "ratio", "p (paired, Holm)", "p (Welch)", "verdict")
RESOURCE_HEADER = ("manifest", "variant", "CPU (s)", "peak RSS (MB)", "latency p50 (s)", "p90 (s)", "p99 (s)",
                   "processes (median)", "connections (median)")
AUTO_HEADER = ("manifest", "downloader", "best fixed", "time vs best fixed", "p (paired, Holm)", "verdict",
               f"time vs fixed {CONCURRENCY}", "p (paired, Holm)", "verdict", "auto settled at (median)", "failed")
"""auto against the fixed settings of its group (harness.analysis.auto): a row per group x manifest, its ratios
auto's time over the fixed one's, as PAIR_HEADER's pairs."""
AUTO_TARGETS = (
    f"The targets (issue 35): auto takes at most {AUTO_BEST_SLOWER:.0%} more time than the best fixed value (on a "
    f"remote that limits connections, {AUTO_LIMITED_SLOWER:.0%} more than the best at or below its limit) and at "
    f"most {AUTO_DEFAULT_SLOWER:.0%} more than fixed {CONCURRENCY}, the default, at the upper end of the time "
    f"ratio's {CONFIDENCE:.0%} CI; and where its time and the best fixed value's are indistinguishable (no "
    "difference detected), it settles on fewer connections than that value.")
"""What auto is judged by, said once for summary.md and report.html (harness.analysis.auto)."""
SWEEP_HEADER = ("manifest", "downloader", "verdict", "value", "MB/s", "95% CI", "best at", "best MB/s", "worst at",
                "worst MB/s", "p (best vs worst, Bonferroni)")
FAILED_HEADER = ("manifest", "variant", "round", "warm-up", "error")


def fmt(value: float | None, digits: int = 3) -> str:
    """A number for people; "–" when there is none."""
    return "–" if value is None else f"{value:.{digits}f}"


def p_text(value: float | None) -> str:
    """A p-value to three significant digits; "–" when there is none."""
    return "–" if value is None else f"{value:.3g}"


def setup_line(results: Results) -> str:
    """What was measured, in one line: where from (the fixtures' scale and network, or the remote),
    runs, baseline, machine."""
    spec, machine = results.experiment, results.environment.get("machine", {})
    commit = results.environment.get("git", {}).get("commit") or "unknown"
    baseline = f", baseline {spec.baseline_variant.name}" if spec.kind != "sweep" else ""
    source = (f"remote {public_url(spec.base_url)}" if spec.base_url is not None
              else f"scale {spec.scale:g}, profile {spec.profile}, server {spec.server}")
    return (
        f"{source}, {spec.runs} runs per cell (+{spec.warmup} warm-up){baseline}; "
        f"{machine.get('cpu_count', '?')} CPUs ({machine.get('cpu_model') or 'unknown CPU'}), commit {commit[:10]}"
    )


def when_line(results: Results) -> str:
    """"Started ..., finished ..., 12.5 min in all.", or how to continue an experiment that did not finish."""
    finished = results.finished_at or "not finished (interrupted? continue with --resume)"
    return f"Started {results.started_at}, finished {finished}, {results.elapsed_seconds / 60:.1f} min in all."


def source_lines(results: Results) -> list[str]:
    """Per manifest synced from a remote or sampled: what it holds and what each run downloads of it,
    e.g. "500: https://host/PULP_MANIFEST_500, 500 files (97.3 MB); each run a 10% sample, seed 0:
    50 files (9.8 MB)". Never a secret: the URL is kept without credentials or query."""
    lines = []
    for manifest, facts in results.manifests.items():
        sample = facts.get("sample")
        if "url" not in facts and sample is None:
            continue
        where = f"{facts['url']}, " if "url" in facts else ""
        whole = sample or facts
        line = f"{manifest}: {where}{whole['files']} files ({human_bytes(whole['bytes'])})"
        if sample is not None:
            line += (f"; each run a {sample['size']} sample (size-stratified, seed {sample['seed']}): "
                     f"{sample['sample_files']} files ({human_bytes(sample['sample_bytes'])})")
        lines.append(line)
    return lines


def ratio_sentence(pair: Pair) -> str:
    """hyperfine's form with the interval: "asyncio ran 1.24 times faster than futures [95% CI 1.18–1.30]"."""
    comparison = pair.comparison
    if comparison is None:
        return f"{pair.variant} vs {pair.baseline}: not enough successful runs to compare"
    fast, slow = (pair.variant, pair.baseline) if comparison.faster == "variant" else (pair.baseline, pair.variant)
    interval = ""
    if comparison.ratio_ci is not None:
        low, high = sorted(1 / r if comparison.faster == "variant" else r for r in comparison.ratio_ci)
        interval = f" [{CONFIDENCE_LABEL} {low:.2f}–{high:.2f}]"
    return f"{fast} ran {comparison.speedup:.2f} times faster than {slow}{interval}"


def verdict(comparison: Comparison | None) -> str:
    """The three-way verdict in words: "faster: 12.3% less time [95% CI 8.1–16.2%]", "slower: 4.0% more
    time [...]", or "no difference detected" with why (within the band, or the difference that could hide in
    the noise). A change is said in time, as hyperfine says it ("78.4% less time"), never as "faster by
    78.4%", which would read as a speed-up of 1.78 where the ratio says 4.64 (ratio_sentence says that)."""
    if comparison is None or comparison.p_value is None:
        return "no test (fewer than 2 runs a side)"
    if comparison.verdict != "no difference":
        return f"{comparison.verdict}: {_change_with_interval(comparison)}"
    if comparison.significant:  # a real difference, inside the band of practical equivalence
        return f"no difference detected ({_change_with_interval(comparison)}, within the ±{comparison.band:.0%} band)"
    return f"no difference detected ({_hiding(comparison)})"


def direction(comparison: Comparison | None) -> str:
    """Which way a verdict went, as one token: "faster", "slower" or "no-difference" (also without a test).
    report.html uses it as the CSS class, the terminal picks its colour by it."""
    return comparison.verdict.replace(" ", "-") if comparison else "no-difference"


def _change_with_interval(comparison: Comparison) -> str:
    """"12.3% less time [95% CI 8.1–16.2%]": how much less (faster) or more (slower) time, from the ratio."""
    sign = -1 if comparison.ratio < 1 else 1
    change = abs(comparison.ratio - 1) * 100
    how = "less time" if sign < 0 else "more time"
    if comparison.ratio_ci is None:
        return f"{change:.1f}% {how}"
    low, high = sorted(sign * (r - 1) * 100 for r in comparison.ratio_ci)
    return f"{change:.1f}% {how} [{CONFIDENCE_LABEL} {low:.1f}–{high:.1f}%]"


def _hiding(comparison: Comparison) -> str:
    """"a difference below 9% could hide in this noise; about 30 runs would resolve 5%"."""
    if comparison.mde_percent is None:
        return "too few runs to say how large a difference could hide"
    words = f"a difference below {comparison.mde_percent:.1f}% could hide in this noise"
    resolve = f"{RESOLVE:.0%}"
    if comparison.runs_to_resolve is None:
        return f"{words}; more than 1000 runs would be needed to resolve {resolve}"
    if comparison.runs_to_resolve > comparison.n:
        return f"{words}; about {comparison.runs_to_resolve} runs would resolve {resolve}"
    return words


def average_sentences(analysis: Analysis, baseline: str) -> list[str]:
    """The seed's conclusion: each variant's percent change averaged over the manifests, with its interval
    and a verdict by the manifests' rule (same band, Holm-adjusted with them), or why there is none."""
    lines = []
    for variant, change in analysis.average_change.items():
        way = "less" if change.percent < 0 else "more"
        said = f"On average over the manifests, {variant} took {abs(change.percent):.1f}% {way} time than {baseline}"
        if not change.judged:
            lines.append(f"{said}: no verdict from {change.rounds} round{'s' if change.rounds != 1 else ''}, "
                         f"as a bootstrap needs {bootstrap_min_rounds()} (from fewer, its interval cannot reach "
                         f"beyond the rounds' range and misses the true change more than {1 - CONFIDENCE:.0%} of the "
                         "time; mean of the per-manifest percent changes, as the seed concludes)")
            continue
        interval = f" [{CONFIDENCE_LABEL} {change.ci_low:+.1f}% … {change.ci_high:+.1f}%]"
        lines.append(
            f"{said}{interval}: {_average_verdict(change)} (Holm-adjusted p = {p_text(change.p_value_adjusted)}; "
            "mean of the per-manifest percent changes, as the seed concludes; interval by bootstrap over rounds)"
        )
    return lines


def _average_verdict(change: AverageChange) -> str:
    """"faster", "slower", "no difference detected" or "no difference detected, within the ±2% band"."""
    if change.verdict != "no difference":
        return change.verdict
    if change.significant:
        return f"no difference detected, within the ±{change.band:.0%} band"
    return "no difference detected"


def disagreement_lines(analysis: Analysis) -> list[str]:
    """One line per variant whose average verdict differs in kind from its manifests' (one says faster or
    slower where the other does not): why the two disagree. None when they agree."""
    lines = []
    for variant, change in analysis.average_change.items():
        verdicts = {pair.manifest: pair.comparison.verdict for pair in analysis.pairs
                    if pair.variant == variant and pair.comparison is not None}
        line = _disagreement(change, verdicts)
        if line:
            lines.append(f"Why {variant}'s average and manifests differ: {line}")
    return lines


def _disagreement(change: AverageChange, verdicts: dict[str, str]) -> str:
    """Why `change`'s verdict differs from the manifests' `verdicts` (manifest: verdict); "" when it does not."""
    faster = [manifest for manifest, said in verdicts.items() if said == "faster"]
    slower = [manifest for manifest, said in verdicts.items() if said == "slower"]
    said = change.verdict
    if said != "no difference":
        against = slower if said == "faster" else faster
        if against:
            return (f"{_manifests(against)} {'slower' if said == 'faster' else 'faster'}, against the average; an "
                    "average over manifests that go both ways says little about any one of them")
        if said in verdicts.values():
            return ""
        return (f"no manifest alone was {said} beyond doubt, but the average pools the rounds of all "
                f"{change.manifests}, so it detects a smaller change than any one of them can")
    if not faster and not slower:
        return ""
    if faster and slower:
        return f"the manifests go both ways ({_manifests(faster)} faster, {_manifests(slower)} slower) and cancel out"
    found, way = (faster, "faster") if faster else (slower, "slower")
    if not change.judged:
        return (f"{_manifests(found)} {way} by the paired t-test, which allows for few rounds; the average's "
                f"bootstrap needs {bootstrap_min_rounds()} and had {change.rounds}")
    why = f"within the ±{change.band:.0%} band" if change.significant else "not significant after Holm's correction"
    return (f"{_manifests(found)} {way}, but the change averaged over all {change.manifests} manifests is {why}: "
            "a difference on some manifests, not on the whole")


def _manifests(names: list[str], shown: int = 5) -> str:
    """"100", "100 and 200", "100, 200 and 300", "100, 200, 300, 400, 500 and 2 more"."""
    if len(names) > shown:
        return f"{', '.join(names[:shown])} and {len(names) - shown} more"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def peer_sentences(analysis: Analysis) -> list[str]:
    """"100: asyncio reaches 0.82x the throughput of curl, the fastest peer (medians)"."""
    return [
        f"{ratio.manifest}: {ratio.variant} reaches {ratio.ratio:.2f}x the throughput of {ratio.peer}, "
        "the fastest peer (medians)"
        for ratio in analysis.peer_ratios
    ]


def overhead_line(analysis: Analysis) -> str:
    """What the harness spent around the syncs, in one sentence: reported so it is never hidden."""
    overhead = analysis.overhead
    return (
        f"Reset before each run: {fmt(overhead['reset_seconds_mean'])} s on average "
        f"({fmt(overhead['reset_seconds_total'], 1)} s in all); sync process start-up and shut-down "
        f"(process wall minus sync time): {fmt(overhead['startup_seconds_mean'])} s on average"
        + (f"; server restarts: {fmt(overhead['restart_seconds_mean'])} s" if overhead["restart_seconds_mean"] else "")
    )


def split_lines(analysis: Analysis, auto: Collection[str] = ()) -> list[str]:
    """"500 x asyncio-p4: 4 processes sharing 10 connections (medians of counted runs)" for each cell whose syncs
    were split, and for each cell of a variant in `auto` (`processes = "auto"`) what auto came to, one process
    too: a split sync's speed-up is the processes', not more connections' (their processes together hold the
    remote's budget, issue 32; older records say how many they held)."""
    lines = []
    for cell in analysis.cells:
        split = cell.processes is not None and cell.processes > 1
        if split or (cell.variant in auto and cell.processes is not None):
            came_to = "processes = auto came to " if cell.variant in auto else ""
            shared = "sharing" if split else "holding"
            lines.append(f"{cell.manifest} x {cell.variant}: {came_to}{_count(cell.processes)} "
                         f"{'processes' if split else 'process'} {shared} {_count(cell.connections)} connections "
                         "(medians of counted runs)")
    return lines


def _count(value: float | None) -> str:
    """A median of counts: "4", "2.5", or "–" when there is none."""
    return "–" if value is None else f"{value:g}"


def matrix(results: Results, analysis: Analysis, figure: str) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """The seed's Data Summary: manifest x variant table of the sync time's "mean" or "stdev",
    with each manifest's files and size; blank where the variant does not run the manifest."""
    names = [variant.name for variant in results.experiment.variants]
    header = ("manifest", "files", "MB", *names)
    rows = []
    for manifest in results.experiment.manifests:
        facts = results.manifests.get(manifest, {})
        size = facts.get("bytes")
        cells = [analysis.find(manifest, name) for name in names]
        values = [_figure(cell, figure) for cell in cells]
        rows.append((manifest, str(facts.get("files", "?")), fmt(size / 1e6 if size else None, 1), *values))
    return header, tuple(rows)


def _figure(cell: Cell | None, figure: str) -> str:
    """A cell's "mean" or "stdev" of its time: "–" without counted runs, "" for a cell not run at all."""
    if cell is None:
        return ""
    return fmt(getattr(cell.time, figure) if cell.time else None)


def time_row(cell: Cell) -> tuple[str, ...]:
    """One cell's sync-time statistics (TIME_HEADER)."""
    time, rate = cell.time, cell.throughput
    if time is None:
        return (cell.manifest, cell.variant, "0", "–", "–", "–", "–", "–", _failed_column(cell))
    spread = f" ± {time.stdev:.3f}" if time.stdev is not None else ""
    interval = f"{fmt(time.ci_low)} … {fmt(time.ci_high)}" if time.ci_low is not None else "–"
    return (
        cell.manifest,
        cell.variant,
        str(time.n),
        f"{time.mean:.3f}{spread}",
        interval,
        f"{time.min:.3f} … {time.max:.3f}",
        fmt(rate.geometric_mean if rate else None, 1),
        fmt(cell.files_per_second.geometric_mean if cell.files_per_second else None, 1),
        _failed_column(cell),
    )


def _failed_column(cell: Cell) -> str:
    """"4", or "4 (+1 warm-up)": the counted runs that failed, as the exit status and `bench compare` count
    them, and the warm-ups apart."""
    return str(cell.failed) + (f" (+{cell.failed_warmups} warm-up)" if cell.failed_warmups else "")


def resource_row(cell: Cell) -> tuple[str, ...]:
    """One cell's CPU, memory and download latency means over counted runs, and the medians of the processes
    and connections they used (RESOURCE_HEADER)."""
    return (cell.manifest, cell.variant, fmt(cell.cpu_seconds, 2), fmt(cell.peak_rss_mb, 1),
            fmt(cell.latency_p50), fmt(cell.latency_p90), fmt(cell.latency_p99), _count(cell.processes),
            _count(cell.connections))


def auto_row(verdict: AutoVerdict) -> tuple[str, ...]:
    """One auto variant on one manifest against its group's fixed values (AUTO_HEADER): the best fixed value,
    auto's time ratio to it and to the default one with interval, Holm-adjusted p and verdict, as a pair's."""
    default = (_ratio_columns(verdict.against_default) if verdict.default_tried
               else ("not tried", "–", "–"))
    best = "–" if verdict.best_value is None else str(verdict.best_value)
    return (verdict.manifest, verdict.label, best, *_ratio_columns(verdict.against_best), *default,
            _count(verdict.settled), str(verdict.failed))


def _ratio_columns(comparison: Comparison | None) -> tuple[str, str, str]:
    """A comparison as three columns: "1.03 [95% CI 0.99–1.07]" (the variant's time over the baseline's), its
    Holm-adjusted p, its verdict."""
    if comparison is None:
        return "–", "–", verdict(comparison)
    low, high = comparison.ratio_ci or (None, None)
    interval = f" [{CONFIDENCE_LABEL} {low:.2f}–{high:.2f}]" if comparison.ratio_ci else ""
    return f"{comparison.ratio:.2f}{interval}", p_text(comparison.p_value_adjusted), verdict(comparison)


def auto_sentence(row: AutoVerdict) -> str:
    """Whether auto met issue 35's targets on one manifest, in plain words: "asyncio on 100: auto meets the
    targets: time vs the best fixed (32) at most +3.1% (the 95% CI's upper end; target +5%), vs fixed 10 at
    most +0.4% (target +2%); settled at 12, fewer connections than 32 for the same time"."""
    head = {True: "meets the targets", False: "misses the targets", None: "cannot be judged yet"}[row.met]
    clauses = [_bound(f"the best fixed ({row.best_value})", row.against_best, row.within_best, row.best_slower)]
    if row.default_tried:
        clauses.append(_bound(f"fixed {row.default_value}", row.against_default, row.within_default,
                              row.default_slower))
    failed = f"; {row.failed} of its counted runs failed" if row.failed else ""
    return f"{row.label} on {row.manifest}: auto {head}: time vs {', vs '.join(clauses)}; {_settled(row)}{failed}"


def _bound(against: str, comparison: Comparison | None, within: bool | None, slower: float) -> str:
    """"the best fixed (32) at most +3.1% (the 95% CI's upper end; target +5%)", or "up to +8.2% ..., above
    the +5% target", or why there is no bound."""
    if within is None or comparison is None or comparison.ratio_ci is None:
        return f"{against}: no interval yet (fewer than 2 rounds a side)"
    upper = f"{(comparison.ratio_ci[1] - 1) * 100:+.1f}%"
    if within:
        return f"{against} at most {upper} (the {CONFIDENCE_LABEL}'s upper end; target {slower * 100:+.0f}%)"
    return f"{against} up to {upper} (the {CONFIDENCE_LABEL}'s upper end), above the {slower * 100:+.0f}% target"


def _settled(row: AutoVerdict) -> str:
    """Where auto settled against the best fixed value, and whether that is fewer connections for the same time
    (the target applies only where their times are indistinguishable)."""
    if row.settled is None:
        return "no counted run to have settled"
    settled = f"settled at {_count(row.settled)}"
    if row.fewer_connections is None:
        return f"{settled} (the best fixed: {row.best_value}; their times differ, or cannot be compared yet)"
    fewer = "fewer" if row.fewer_connections else "no fewer"
    return f"{settled}, {fewer} connections than {row.best_value} for the same time"


def sweep_row(pick: Recommendation) -> tuple[str, ...]:
    """One recommendation (SWEEP_HEADER): the verdict, the smallest value within tolerance of the best,
    and the evidence."""
    return (pick.manifest, pick.group, pick.verdict, value_text(pick.value), fmt(pick.mb_per_s, 1),
            "–" if pick.ci_low is None else f"{fmt(pick.ci_low, 1)} … {fmt(pick.ci_high, 1)}",
            value_text(pick.best_value), fmt(pick.best_mb_s, 1), value_text(pick.worst_value),
            fmt(pick.worst_mb_s, 1), p_text(pick.p_value))


def failed_row(run: RunRecord) -> tuple[str, ...]:
    """A failed run (FAILED_HEADER): where, when, and its error."""
    return (run.manifest, run.variant, str(run.round), "yes" if run.warmup else "no", run.error or "")


def run_row(run: RunRecord) -> tuple[str, ...]:
    """Every field of a run record (RUN_FIELDS), floats to four significant digits, None left empty."""
    return tuple(_field_text(value) for value in run.as_dict().values())


def _field_text(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)
