"""Findings in words and tables: the seed's Data Summary, hyperfine's ratio sentence, warnings.

The same rows feed summary.md, the terminal table and report.html, so the three always agree.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.analysis.findings import Analysis, Cell, Pair
from harness.analysis.stats import Comparison
from harness.analysis.sweep import Recommendation, recommend, recommendation_sentence, setting_label, value_text
from harness.defaults import CONFIDENCE, RESOLVE
from harness.experiment.operator_remote import public_url
from harness.experiment.plan import human_bytes
from harness.experiment.spec import Experiment
from harness.results.folder import Results
from harness.run.machine import warnings_for
from harness.warning import FigureWarning

__all__ = [
    "fmt",
    "setup_line",
    "ratio_sentence",
    "verdict",
    "average_sentence",
    "peer_sentences",
    "sweep_sentences",
    "time_rows",
    "pair_rows",
    "resource_rows",
    "sweep_rows",
    "matrix",
    "markdown_table",
    "TIME_HEADER",
    "PAIR_HEADER",
    "RESOURCE_HEADER",
    "SWEEP_HEADER",
    "summary_markdown",
    "print_summary",
    "overhead_line",
    "all_warnings",
]

TIME_HEADER = ("manifest", "variant", "n", "mean ± σ (s)", "95% CI (s)", "min … max (s)", "MB/s (geo. mean)",
               "files/s (geo. mean)", "failed")
CONFIDENCE_LABEL = f"{CONFIDENCE:.0%} CI"
"""How every interval is labelled: one level everywhere (defaults.CONFIDENCE)."""
PAIR_HEADER = ("manifest", "variant", "change", "ratio", "p (paired, Holm)", "p (Welch)", "verdict")
RESOURCE_HEADER = ("manifest", "variant", "CPU (s)", "peak RSS (MB)", "latency p50 (s)", "p90 (s)", "p99 (s)")
SWEEP_HEADER = ("manifest", "downloader", "verdict", "value", "MB/s", "95% CI", "best at", "best MB/s", "worst at",
                "worst MB/s", "p (best vs worst, Bonferroni)")


def fmt(value: float | None, digits: int = 3) -> str:
    """A number for people; "–" when there is none."""
    return "–" if value is None else f"{value:.{digits}f}"


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
    """The three-way verdict in words: "faster by 12.3% [95% CI 8.1–16.2%]", "slower by ...", or "no
    difference detected" with why (within the band, or the difference that could hide in the noise)."""
    if comparison is None or comparison.p_value is None:
        return "no test (fewer than 2 runs a side)"
    if comparison.verdict != "no difference":
        return f"{comparison.verdict} by {_change_with_interval(comparison)}"
    if comparison.significant:  # a real difference, inside the band of practical equivalence
        return f"no difference detected ({_change_with_interval(comparison)}, within the ±{comparison.band:.0%} band)"
    return f"no difference detected ({_hiding(comparison)})"


def _change_with_interval(comparison: Comparison) -> str:
    """"12.3% [95% CI 8.1–16.2%]": how much less (faster) or more (slower) time, from the ratio."""
    sign = -1 if comparison.ratio < 1 else 1
    change = abs(comparison.ratio - 1) * 100
    if comparison.ratio_ci is None:
        return f"{change:.1f}%"
    low, high = sorted(sign * (r - 1) * 100 for r in comparison.ratio_ci)
    return f"{change:.1f}% [{CONFIDENCE_LABEL} {low:.1f}–{high:.1f}%]"


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


def average_sentence(analysis: Analysis, baseline: str) -> list[str]:
    """The seed's conclusion: each variant's percent change averaged over the manifests, with its interval."""
    lines = []
    for variant, change in analysis.average_change.items():
        direction = "less" if change.percent < 0 else "more"
        interval = "" if change.ci_low is None else (
            f" [{CONFIDENCE_LABEL} {change.ci_low:+.1f}% … {change.ci_high:+.1f}%]")
        judged = "no difference detected" if change.verdict == "no difference" else change.verdict
        lines.append(
            f"On average over the manifests, {variant} took {abs(change.percent):.1f}% {direction} time than "
            f"{baseline}{interval}: {judged} (mean of the per-manifest percent changes, as the seed concludes; "
            "interval by bootstrap over rounds)"
        )
    return lines


def peer_sentences(analysis: Analysis) -> list[str]:
    """"100: asyncio reaches 0.82x the throughput of curl, the fastest peer (medians)"."""
    return [
        f"{ratio.manifest}: {ratio.variant} reaches {ratio.ratio:.2f}x the throughput of {ratio.peer}, "
        "the fastest peer (medians)"
        for ratio in analysis.peer_ratios
    ]


def sweep_sentences(experiment: Experiment, analysis: Analysis) -> list[str]:
    """A sweep's recommendation per manifest and downloader, in words; none for other experiments."""
    if experiment.kind != "sweep":
        return []
    return [recommendation_sentence(pick) for pick in recommend(experiment, analysis)]


def sweep_rows(picks: Sequence[Recommendation]) -> list[tuple[str, ...]]:
    """One row per recommendation (SWEEP_HEADER): the verdict, the smallest value within tolerance of
    the best, and the evidence."""
    return [
        (p.manifest, p.downloader, p.verdict, value_text(p.value), fmt(p.mb_per_s, 1),
         "–" if p.ci_low is None else f"{fmt(p.ci_low, 1)} … {fmt(p.ci_high, 1)}", value_text(p.best_value),
         fmt(p.best_mb_s, 1), value_text(p.worst_value), fmt(p.worst_mb_s, 1),
         "–" if p.p_value is None else f"{p.p_value:.3g}")
        for p in picks
    ]


def time_rows(analysis: Analysis) -> list[tuple[str, ...]]:
    """One row per cell: the sync-time statistics (TIME_HEADER)."""
    return [_time_row(cell) for cell in analysis.cells]


def pair_rows(analysis: Analysis) -> list[tuple[str, ...]]:
    """One row per variant against the baseline per manifest (PAIR_HEADER)."""
    rows: list[tuple[str, ...]] = []
    for pair in analysis.pairs:
        comparison = pair.comparison
        change = f"{comparison.percent_change:+.1f}%" if comparison else "–"
        adjusted = _p(comparison.p_value_adjusted) if comparison else "–"
        welch = _p(comparison.p_value_welch) if comparison else "–"
        rows.append((pair.manifest, pair.variant, change, ratio_sentence(pair), adjusted, welch, verdict(comparison)))
    return rows


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def summary_markdown(results: Results, analysis: Analysis) -> str:
    """summary.md: the seed's Data Summary tables (mean, stddev), comparisons, warnings, overhead."""
    spec = results.experiment
    lines = [f"# {spec.name}", "", *([spec.description, ""] if spec.description else []), setup_line(results), ""]
    sources = source_lines(results)
    lines += [*(f"- {line}" for line in sources), *([""] if sources else [])]
    lines += ["## Mean sync time (s)", "", *markdown_table(*matrix(results, analysis, "mean"))]
    lines += ["", "## Std. deviation of sync time (s)", "", *markdown_table(*matrix(results, analysis, "stdev"))]
    lines += ["", "## Every cell", "", *markdown_table(TIME_HEADER, time_rows(analysis))]
    lines += ["", "## Resources (means of counted runs)", "", *markdown_table(RESOURCE_HEADER, resource_rows(analysis))]
    if analysis.pairs:
        lines += ["", f"## Against {spec.baseline_variant.name}", ""]
        lines += markdown_table(PAIR_HEADER, pair_rows(analysis))
        lines += ["", *(f"- {line}" for line in average_sentence(analysis, spec.baseline_variant.name))]
    if analysis.peer_ratios:
        lines += ["", "## Against the fastest peer", "", *(f"- {line}" for line in peer_sentences(analysis))]
    if spec.kind == "sweep":
        picks = recommend(spec, analysis)
        lines += ["", f"## Recommended {setting_label(spec.sweep_setting)}", ""]
        lines += [*markdown_table(SWEEP_HEADER, sweep_rows(picks)), ""]
        lines += [f"- {recommendation_sentence(pick)}" for pick in picks]
    warnings = all_warnings(results, analysis)
    if warnings:
        lines += ["", "## Warnings", "", *(f"- {_markdown(warning)}" for warning in warnings)]
    lines += ["", "## Harness overhead", "", overhead_line(analysis), ""]
    return "\n".join(lines)


def all_warnings(results: Results, analysis: Analysis) -> list[FigureWarning]:
    """What the figures should be read with: the runs' own warnings (harness.analysis.findings), then the machine's
    (harness.run.machine.warnings_for)."""
    return [*analysis.warnings, *warnings_for(results.environment)]


def _markdown(warning: FigureWarning) -> str:
    return f"**{warning.subject}**: {warning.text}" if warning.subject else warning.text


def print_summary(console: Console, results: Results, analysis: Analysis) -> None:
    """The summary table, the comparisons and the warnings on the terminal."""
    spec = results.experiment
    for line in source_lines(results):
        console.print(line, highlight=False, markup=False)
    table = Table(*TIME_HEADER, title=f"{spec.name}: sync time per manifest and variant", caption=setup_line(results))
    for row in time_rows(analysis):
        table.add_row(*row)
    console.print(table)
    for pair, row in zip(analysis.pairs, pair_rows(analysis), strict=True):
        colour = {"faster": "green", "slower": "red"}.get(pair.comparison.verdict if pair.comparison else "", "dim")
        console.print(f"{pair.manifest}: {row[3]} ({row[2]} time, Holm-adjusted p = {row[4]}, "
                      f"[{colour}]{row[6]}[/{colour}])", highlight=False)
    for line in [*average_sentence(analysis, spec.baseline_variant.name), *peer_sentences(analysis),
                 *sweep_sentences(spec, analysis)]:
        console.print(line)
    for warning in all_warnings(results, analysis):
        subject = f"[bold]{escape(warning.subject)}[/bold]: " if warning.subject else ""
        console.print(f"[yellow]Warning:[/yellow] {subject}{escape(warning.text)}", highlight=False)


def _time_row(cell: Cell) -> tuple[str, ...]:
    time, rate = cell.time, cell.throughput
    if time is None:
        return (cell.manifest, cell.variant, "0", "–", "–", "–", "–", "–", str(cell.failed))
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
        str(cell.failed),
    )


def matrix(results: Results, analysis: Analysis, figure: str) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The seed's Data Summary: manifest x variant table of the sync time's "mean" or "stdev",
    with each manifest's files and size."""
    names = [variant.name for variant in results.experiment.variants]
    header = ("manifest", "files", "MB", *names)
    rows = []
    for manifest in results.experiment.manifests:
        facts = results.manifests.get(manifest, {})
        size = facts.get("bytes")
        cells = [analysis.cell(manifest, name).time for name in names]
        values = [fmt(getattr(time, figure) if time else None) for time in cells]
        rows.append((manifest, str(facts.get("files", "?")), fmt(size / 1e6 if size else None, 1), *values))
    return header, rows


def resource_rows(analysis: Analysis) -> list[tuple[str, ...]]:
    """One row per cell: CPU, memory and download latency means over counted runs (RESOURCE_HEADER)."""
    return [
        (c.manifest, c.variant, fmt(c.cpu_seconds, 2), fmt(c.peak_rss_mb, 1),
         fmt(c.latency_p50), fmt(c.latency_p90), fmt(c.latency_p99))
        for c in analysis.cells
    ]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A GitHub-flavoured Markdown table, one line per row."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def overhead_line(analysis: Analysis) -> str:
    """What the harness spent around the syncs, in one sentence: reported so it is never hidden."""
    overhead = analysis.overhead
    return (
        f"Reset before each run: {fmt(overhead['reset_seconds_mean'])} s on average "
        f"({fmt(overhead['reset_seconds_total'], 1)} s in all); sync process start-up and shut-down "
        f"(process wall minus sync time): {fmt(overhead['startup_seconds_mean'])} s on average"
        + (f"; server restarts: {fmt(overhead['restart_seconds_mean'])} s" if overhead["restart_seconds_mean"] else "")
    )
