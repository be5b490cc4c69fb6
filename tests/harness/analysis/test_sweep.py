"""Sweeps of any numeric Remote setting or of processes, their verdicts and results.json, on synthetic runs
(no syncs)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from scipy import stats as scipy_stats

from harness import cli
from harness.analysis.derived import save_run_outputs
from harness.analysis.findings import analyse
from harness.analysis.sweep import (
    INDISTINGUISHABLE,
    RECOMMENDED,
    auto_lines,
    recommend,
    recommendation_sentence,
    sweep_experiment,
    sweep_lines,
)
from harness.experiment.spec import Experiment, SpecError, experiment_from_dict, sweep_value
from harness.experiment.variant import InlineVariant
from harness.report.render import render
from harness.results.folder import RESULTS_FILE, Results, load_results
from tests.harness.helpers import make_run

# seconds per sync of 10 MB at each concurrency, three runs each: flat from 8 on, clearly apart below
CLEAR = {1: (10.0, 10.1, 9.9), 2: (5.0, 5.05, 4.95), 4: (2.6, 2.62, 2.58), 8: (1.02, 1.03, 1.01), 16: (1.0, 1.01, 0.99)}
# three values whose runs overlap: no value is better than another beyond noise
NOISY = {1: (1.0, 2.0, 1.5), 2: (1.4, 0.9, 2.1), 4: (1.2, 1.9, 1.0)}


def _results(seconds: dict[float, tuple[float, ...]], **sweep: Any) -> Results:
    """A sweep of asyncio over the keys of `seconds`, each run given its sync seconds."""
    spec = sweep_experiment(["asyncio"], list(seconds), ["100"], runs=3, warmup=0, **sweep)
    runs = [make_run(variant.name, time, round_, concurrency=variant.download_concurrency)
            for variant, times in zip(spec.variants, seconds.values(), strict=True)
            for round_, time in enumerate(times, start=1)]
    return Results(experiment=spec, runs=runs)


def _pick(results: Results) -> Any:
    (pick,) = recommend(results.experiment, analyse(results.experiment, results.runs))
    return pick


def test_the_recommendation_is_in_results_json_with_a_positive_interval(tmp_path: Path) -> None:
    results = _results(CLEAR)
    save_run_outputs(tmp_path, results)
    (saved,) = json.loads((tmp_path / RESULTS_FILE).read_text())["recommendations"]
    assert {key: saved[key] for key in ("manifest", "downloader", "setting", "verdict", "value", "best_value")} == {
        "manifest": "100", "downloader": "asyncio", "setting": "download_concurrency", "verdict": RECOMMENDED,
        "value": 8, "best_value": 16}
    assert 0 < saved["ci_low"] <= saved["mb_per_s"] <= saved["ci_high"]
    assert saved["best_mb_s"] == pytest.approx(10.0, rel=0.01) and saved["tolerance"] == 0.05
    assert saved["p_value"] < 0.05


def test_an_experiment_that_is_no_sweep_has_no_recommendations(tmp_path: Path) -> None:
    spec = Experiment(name="e", variants=(InlineVariant("asyncio", "asyncio"),), manifests=("100",), runs=2)
    results = Results(experiment=spec, runs=[make_run("asyncio", 1.0, 1), make_run("asyncio", 1.1, 2)])
    save_run_outputs(tmp_path, results)
    assert "recommendations" not in json.loads((tmp_path / RESULTS_FILE).read_text())


def test_runs_that_cannot_separate_the_values_recommend_nothing() -> None:
    pick = _pick(_results(NOISY))
    assert pick.verdict == INDISTINGUISHABLE and pick.value in NOISY  # shown, but no finding: any will do
    assert pick.ci_low is not None and 0 < pick.ci_low <= pick.mb_per_s <= pick.ci_high
    assert pick.p_value is not None and pick.p_value >= 0.05
    sentence = recommendation_sentence(pick)
    assert "the runs cannot tell concurrency 1, 2, 4 apart (best" in sentence
    assert sentence.endswith("; run more (--runs) or accept any") and "use " not in sentence


def test_the_best_against_the_worst_is_bonferroni_adjusted_for_every_pair() -> None:
    pick = _pick(_results(CLEAR))
    welch = scipy_stats.ttest_ind(CLEAR[16], CLEAR[1], equal_var=False).pvalue
    assert pick.p_value == pytest.approx(min(1.0, welch * 10))  # 5 values: 10 pairs


def test_a_value_with_one_run_recommends_nothing() -> None:
    results = _results(CLEAR)
    results.runs = [run for run in results.runs if not (run.variant == "asyncio-c2" and run.round > 1)]
    pick = _pick(results)
    assert (pick.verdict, pick.few_runs, pick.p_value) == (INDISTINGUISHABLE, (2,), None)
    assert "(fewer than 2 counted runs at 2)" in recommendation_sentence(pick)


def test_a_rate_limit_sweep_names_its_variants_and_sets_the_remote_setting() -> None:
    spec = sweep_experiment(["asyncio", "futures"], ["20", 5, 0.5, "5"], ["100"], sweep_setting="rate_limit")
    assert spec.sweep_setting == "rate_limit" and spec.kind == "sweep"
    assert [v.name for v in spec.variants] == [
        "asyncio-rate_limit-0.5", "asyncio-rate_limit-5", "asyncio-rate_limit-20",
        "futures-rate_limit-0.5", "futures-rate_limit-5", "futures-rate_limit-20"]
    assert [v.remote["rate_limit"] for v in spec.variants[:3]] == [0.5, 5.0, 20.0]
    assert {v.download_concurrency for v in spec.variants} == {10}
    assert spec.remote_of(spec.variants[1])["rate_limit"] == 5.0
    assert experiment_from_dict(spec.as_dict()) == spec


def test_a_rate_limit_sweep_recommends_a_rate(tmp_path: Path) -> None:
    results = _results({5: (4.0, 4.1, 3.9), 10: (2.0, 2.05, 1.95), 20: (1.96, 1.98, 2.0)}, sweep_setting="rate_limit")
    pick = _pick(results)
    assert (pick.setting, pick.verdict, pick.value, pick.best_value) == ("rate_limit", RECOMMENDED, 10.0, 20.0)
    assert "asyncio on 100: use rate_limit 10 (" in recommendation_sentence(pick)
    save_run_outputs(tmp_path, results)
    assert load_results(tmp_path).experiment.sweep_setting == "rate_limit"


def test_a_sweep_through_zero_renders_its_plot_and_report(tmp_path: Path) -> None:
    results = _results({0: (1.0, 1.1, 0.9), 3: (1.0, 0.95, 1.05)}, sweep_setting="max_retries")
    save_run_outputs(tmp_path, results)
    rendered = render(tmp_path)
    assert (tmp_path / "sweep.png").is_file()
    summary = (tmp_path / "summary.md").read_text()
    assert "## Recommended max_retries" in summary and "cannot tell max_retries 0, 3 apart" in summary
    assert "Sweep of max_retries" in rendered.report.read_text()


def test_a_processes_sweep_names_its_variants_and_sets_their_processes() -> None:
    spec = sweep_experiment(["asyncio", "futures"], ["4", 1, 2, "1"], ["100"], sweep_setting="processes")
    assert spec.sweep_setting == "processes" and spec.kind == "sweep"
    assert [(v.name, v.processes) for v in spec.variants] == [
        ("asyncio-p1", 1), ("asyncio-p2", 2), ("asyncio-p4", 4),
        ("futures-p1", 1), ("futures-p2", 2), ("futures-p4", 4)]
    assert {v.download_concurrency for v in spec.variants} == {10} and all(not v.remote for v in spec.variants)
    assert experiment_from_dict(spec.as_dict()) == spec


def test_a_processes_sweep_recommends_the_fewest_within_the_tolerance_and_renders(tmp_path: Path) -> None:
    results = _results({1: (4.0, 4.1, 3.9), 2: (2.0, 2.05, 1.95), 4: (1.96, 1.98, 2.0)}, sweep_setting="processes")
    pick = _pick(results)
    assert (pick.setting, pick.verdict, pick.value, pick.best_value) == ("processes", RECOMMENDED, 2, 4)
    assert "asyncio on 100: use processes 2 (" in recommendation_sentence(pick)
    save_run_outputs(tmp_path, results)
    rendered = render(tmp_path)
    assert (tmp_path / "sweep.png").is_file() and "## Recommended processes" in (tmp_path / "summary.md").read_text()
    assert "Sweep of processes" in rendered.report.read_text()


def test_a_spec_sweeps_processes_when_every_variant_has_a_number_of_them() -> None:
    def sweep(*variants: dict[str, Any]) -> Experiment:
        return experiment_from_dict({"name": "s", "kind": "sweep", "sweep_setting": "processes",
                                     "variants": [{"name": "a", "downloader": "asyncio"}, *variants]})

    spec = sweep({"name": "b", "downloader": "asyncio", "processes": 4})
    assert [sweep_value(spec, variant) for variant in spec.variants] == [1, 4]
    with pytest.raises(SpecError, match="variant 'b': a sweep of processes needs a number for it, not 'auto'"):
        sweep({"name": "b", "downloader": "asyncio", "processes": "auto"})
    with pytest.raises(SpecError, match="variant 'b': a sweep of processes needs a number for it, not None"):
        sweep({"name": "b", "kind": "command", "command": "true"})


def test_a_spec_cannot_sweep_a_setting_that_is_not_a_number() -> None:
    with pytest.raises(SpecError, match="sweep_setting = 'headers': a numeric Remote setting"):
        Experiment(name="s", variants=(InlineVariant("a", "asyncio"),)).with_overrides(sweep_setting="headers")
    with pytest.raises(SpecError, match="variant 'a': a sweep of rate_limit needs a number"):
        Experiment(name="s", variants=(InlineVariant("a", "asyncio"),)).with_overrides(
            kind="sweep", sweep_setting="rate_limit")


def _invoke(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(cli.bench_group, ["sweep", "--downloader", "asyncio", *args])
    return result.exit_code, [line for line in result.output.splitlines() if line.startswith("Error:")]


@pytest.mark.parametrize(("given", "message"), [
    ("nope=1,2", "'nope' is neither a numeric Remote setting nor processes; sweep one of: download_concurrency"),
    ("headers=a", "'headers' is neither a numeric Remote setting nor processes"),
    ("rate_limit=5,fast", "rate_limit: 'fast' is not a number"),
    ("max_retries=0,1.5", "max_retries: '1.5' is not a whole number"),
    ("max_retries=-1,3", "max_retries must be 0 or more, not -1"),
    ("rate_limit=", "rate_limit: no values to sweep"),
    ("rate_limit", "'rate_limit': expected NAME=V1,V2,..."),
    ("processes=1,auto", "processes: auto is not a number, so a sweep cannot order it; sweep numbers"),
    ("processes=0,2", "processes must be from 1 to 256, or auto, not '0'"),
    ("processes=2,x", "processes must be a whole number from 1 up, or auto, not 'x'"),
])
def test_a_bad_sweep_is_a_usage_error(given: str, message: str) -> None:
    code, errors = _invoke("--sweep", given)
    assert code == 2 and len(errors) == 1 and message in errors[0], errors


def test_sweep_and_concurrency_together_are_a_usage_error() -> None:
    code, errors = _invoke("--concurrency", "1,2", "--sweep", "rate_limit=5,10")
    assert code == 2 and errors == ["Error: give --concurrency or --sweep, not both "
                                    "(--sweep download_concurrency=... is --concurrency)"]


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[Experiment]:
    """The experiments `bench sweep` would run, kept instead of run."""
    experiments: list[Experiment] = []

    def execute(experiment: Experiment, options: dict[str, Any]) -> Any:
        experiments.append(experiment)
        return SimpleNamespace(results=SimpleNamespace(runs=[]))

    monkeypatch.setattr(cli, "_execute", execute)
    return experiments


def test_the_sweep_option_builds_the_experiment(made: list[Experiment]) -> None:
    code, errors = _invoke("--sweep", "max_retries=3,0", "--runs", "2")
    assert (code, errors) == (0, [])
    (experiment,) = made
    assert experiment.sweep_setting == "max_retries" and experiment.runs == 2
    assert [(v.name, dict(v.remote)) for v in experiment.variants] == [
        ("asyncio-max_retries-0", {"max_retries": 0}), ("asyncio-max_retries-3", {"max_retries": 3})]


def test_a_sweep_of_processes_with_processes_is_a_usage_error() -> None:
    code, errors = _invoke("--sweep", "processes=1,2", "--processes", "2")
    assert code == 2 and errors == ["Error: give --processes or a sweep of processes, not both: the sweep gives "
                                    "each variant its own"]


@pytest.mark.parametrize(("given", "variants"), [
    (["--sweep", "processes=2,1"], [("asyncio-p1", 1, 10), ("asyncio-p2", 2, 10)]),
    (["--concurrency", "2,4", "--processes", "auto"], [("asyncio-c2", "auto", 2), ("asyncio-c4", "auto", 4)]),
    (["--sweep", "rate_limit=5", "--processes", "3"], [("asyncio-rate_limit-5", 3, 10)]),
], ids=["swept", "each-concurrency", "each-rate"])
def test_processes_are_swept_or_given_to_every_variant(made: list[Experiment], given: list[str],
                                                       variants: list[tuple[str, Any, int]]) -> None:
    """A swept value in its variant's `processes`; --processes in every variant, whatever is swept."""
    assert _invoke(*given) == (0, [])
    (experiment,) = made
    assert [(v.name, v.processes, v.download_concurrency) for v in experiment.variants] == variants


def test_a_best_value_at_the_edge_of_the_range_says_to_sweep_beyond_it() -> None:
    assert recommendation_sentence(_pick(_results(CLEAR))).endswith("larger ones may be faster still: sweep beyond 16")
    inside = _pick(_results({1: (4.0, 4.1, 3.9), 2: (2.0, 2.02, 1.98), 4: (2.3, 2.32, 2.28)}))
    assert (inside.verdict, inside.best_value) == (RECOMMENDED, 2)
    assert "sweep beyond" not in recommendation_sentence(inside)


def test_auto_is_a_value_of_a_concurrency_sweep_after_the_numbers(made: list[Experiment]) -> None:
    assert _invoke("--concurrency", "16,auto,4") == (0, [])
    (experiment,) = made
    assert [(v.name, v.download_concurrency) for v in experiment.variants] == [
        ("asyncio-c4", 4), ("asyncio-c16", 16), ("asyncio-auto", "auto")]
    code, errors = _invoke("--concurrency", "4,automatic")
    assert code == 2 and "expected a comma-separated list" in errors[0]


def _auto_sweep(profiles: tuple[str, ...] = ("loopback",)) -> Results:
    """asyncio at 1, 4 and auto on each of `profiles`, three rounds: 4 the best, auto as fast, settled at 6."""
    variants = tuple(InlineVariant(f"{profile}-{value}", "asyncio", profile=profile, download_concurrency=value)
                     for profile in profiles for value in (1, 4, "auto"))
    spec = Experiment(name="s", variants=variants, manifests=("100",), runs=3, warmup=0, kind="sweep")
    times = {1: (4.0, 4.1, 3.9), 4: (1.0, 1.01, 0.99), "auto": (1.02, 1.0, 1.01)}
    runs = [make_run(variant.name, time, round_, concurrency=6 if variant.auto_concurrency else
                     variant.download_concurrency) for variant in spec.variants
            for round_, time in enumerate(times[variant.download_concurrency], start=1)]
    return Results(experiment=spec, runs=runs)


def test_auto_is_a_level_across_the_values_and_no_candidate() -> None:
    results = _auto_sweep()
    analysis = analyse(results.experiment, results.runs)
    (line,) = sweep_lines(results.experiment, analysis, "100")
    assert (line.group, list(line.values), line.recommended) == ("asyncio", [1, 4], 4)
    (auto,) = auto_lines(results.experiment, analysis, "100")
    throughput = analysis.cell("100", "loopback-auto").throughput
    assert throughput is not None and (auto.group, auto.mb_s, auto.ci_low, auto.ci_high) == (
        "asyncio", throughput.geometric_mean, throughput.ci_low, throughput.ci_high)
    assert auto.label == "auto (settled at 6)"
    (pick,) = recommend(results.experiment, analysis)
    assert pick.values == (1, 4) and pick.value == 4


def test_curves_are_per_profile_where_the_variants_profiles_differ() -> None:
    results = _auto_sweep(("wan", "lan"))
    analysis = analyse(results.experiment, results.runs)
    assert [line.group for line in sweep_lines(results.experiment, analysis, "100")] == ["asyncio (lan)",
                                                                                         "asyncio (wan)"]
    assert [line.group for line in auto_lines(results.experiment, analysis, "100")] == ["asyncio (wan)",
                                                                                        "asyncio (lan)"]
    picks = recommend(results.experiment, analysis)
    assert [(pick.downloader, pick.group) for pick in picks] == [("asyncio", "asyncio (lan)"),
                                                                 ("asyncio", "asyncio (wan)")]
    assert recommendation_sentence(picks[0]).startswith("asyncio (lan) on 100: use concurrency 4")


def test_a_sweep_of_another_setting_keeps_auto_out_of_its_values() -> None:
    with pytest.raises(SpecError, match="processes: auto is not a number"):
        sweep_experiment(["asyncio"], [1, "auto"], ["100"], "processes")
    with pytest.raises(SpecError, match="rate_limit: 'auto' is not a number"):
        sweep_experiment(["asyncio"], [5, "auto"], ["100"], "rate_limit")
