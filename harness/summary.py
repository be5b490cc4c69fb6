"""Findings in words and tables: the seed's Data Summary, hyperfine's ratio sentence, warnings.

The same rows feed summary.md, the terminal table and report.html, so the three always agree.
"""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.table import Table

from harness.analysis import Analysis, Cell, Pair
from harness.plan import human_bytes
from harness.remote import public_url
from harness.results import Results
from harness.spec import Experiment
from harness.stats import Comparison
from harness.sweep import Recommendation, recommend, recommendation_sentence, setting_label, value_text

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
]

TIME_HEADER = ("manifest", "variant", "n", "mean ± σ (s)", "95% CI (s)", "min … max (s)", "MB/s (geo. mean)", "failed")
PAIR_HEADER = ("manifest", "variant", "change", "ratio", "p (Welch)", "verdict")
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
    """hyperfine's form: "asyncio ran 1.24 ± 0.03 times faster than futures"."""
    comparison = pair.comparison
    if comparison is None:
        return f"{pair.variant} vs {pair.baseline}: not enough successful runs to compare"
    fast, slow = (pair.variant, pair.baseline) if comparison.faster == "variant" else (pair.baseline, pair.variant)
    spread = f" ± {comparison.ratio_uncertainty:.2f}" if comparison.ratio_uncertainty is not None else ""
    return f"{fast} ran {comparison.ratio:.2f}{spread} times faster than {slow}"


def verdict(comparison: Comparison | None, alpha: float) -> str:
    """"significant" / "not significant" at `alpha`, or why there is no test."""
    if comparison is None or comparison.p_value is None:
        return "no test (fewer than 2 runs)"
    return f"significant (p < {alpha:g})" if comparison.significant else "not significant"


def average_sentence(analysis: Analysis, baseline: str) -> list[str]:
    """The seed's conclusion: each variant's percent change averaged over the manifests."""
    lines = []
    for variant, change in analysis.average_change.items():
        direction = "less" if change < 0 else "more"
        lines.append(
            f"On average over the manifests, {variant} took {abs(change):.1f}% {direction} time than {baseline} "
            f"(mean of the per-manifest percent changes, as the seed concludes)"
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


def pair_rows(analysis: Analysis, alpha: float) -> list[tuple[str, ...]]:
    """One row per variant against the baseline per manifest (PAIR_HEADER)."""
    rows = []
    for pair in analysis.pairs:
        comparison = pair.comparison
        change = f"{comparison.percent_change:+.1f}%" if comparison else "–"
        p_value = "–" if comparison is None or comparison.p_value is None else f"{comparison.p_value:.3g}"
        judged = verdict(pair.comparison, alpha)
        rows.append((pair.manifest, pair.variant, change, ratio_sentence(pair), p_value, judged))
    return rows


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
        lines += markdown_table(PAIR_HEADER, pair_rows(analysis, spec.alpha))
        lines += ["", *(f"- {line}" for line in average_sentence(analysis, spec.baseline_variant.name))]
    if analysis.peer_ratios:
        lines += ["", "## Against the fastest peer", "", *(f"- {line}" for line in peer_sentences(analysis))]
    if spec.kind == "sweep":
        picks = recommend(spec, analysis)
        lines += ["", f"## Recommended {setting_label(spec.sweep_setting)}", ""]
        lines += [*markdown_table(SWEEP_HEADER, sweep_rows(picks)), ""]
        lines += [f"- {recommendation_sentence(pick)}" for pick in picks]
    if analysis.warnings:
        lines += ["", "## Warnings", "", *(f"- {warning}" for warning in analysis.warnings)]
    lines += ["", "## Harness overhead", "", overhead_line(analysis), ""]
    return "\n".join(lines)


def print_summary(console: Console, results: Results, analysis: Analysis) -> None:
    """The summary table, the comparisons and the warnings on the terminal."""
    spec = results.experiment
    for line in source_lines(results):
        console.print(line, highlight=False, markup=False)
    table = Table(*TIME_HEADER, title=f"{spec.name}: sync time per manifest and variant", caption=setup_line(results))
    for row in time_rows(analysis):
        table.add_row(*row)
    console.print(table)
    for pair, row in zip(analysis.pairs, pair_rows(analysis, spec.alpha)):
        console.print(f"{pair.manifest}: {row[3]} ({row[2]} time, p = {row[4]}, {row[5]})")
    for line in [*average_sentence(analysis, spec.baseline_variant.name), *peer_sentences(analysis),
                 *sweep_sentences(spec, analysis)]:
        console.print(line)
    for warning in analysis.warnings:
        console.print(f"[yellow]Warning:[/yellow] {warning}")


def _time_row(cell: Cell) -> tuple[str, ...]:
    time, rate = cell.time, cell.throughput
    if time is None:
        return (cell.manifest, cell.variant, "0", "–", "–", "–", "–", str(cell.failed))
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
