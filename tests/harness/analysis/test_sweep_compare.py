"""The sweep's recommendation and the comparison of two folders, on synthetic runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.analysis.compare import change_rows, compare_results, setup_differences
from harness.analysis.derived import save_run_outputs
from harness.analysis.findings import analyse
from harness.analysis.sweep import recommend, recommendation_sentence, sweep_experiment
from harness.experiment.spec import Experiment
from harness.experiment.variant import InlineVariant, RqVariant
from harness.report.render import render
from harness.results.folder import Results
from tests.harness.helpers import make_run

# seconds per sync of 10 MB: throughput rises to concurrency 8, then flattens (within 5% from 8 on)
SECONDS = {1: 10.0, 2: 5.0, 4: 2.6, 8: 1.02, 16: 1.0, 32: 1.01}


def _sweep_results() -> Results:
    spec = sweep_experiment(["asyncio"], list(SECONDS), ["100"], runs=3, warmup=0)
    runs = [make_run(f"asyncio-c{c}", s * factor, r) for c, s in SECONDS.items()
            for r, factor in ((1, 1.0), (2, 1.01), (3, 0.99))]
    return Results(experiment=spec, runs=runs)


def test_sweep_recommends_the_smallest_concurrency_near_the_best() -> None:
    results = _sweep_results()
    (pick,) = recommend(results.experiment, analyse(results.experiment, results.runs))
    assert (pick.downloader, pick.setting, pick.value, pick.best_value, pick.verdict) == (
        "asyncio", "download_concurrency", 8, 16, "recommended")
    assert pick.mb_per_s is not None and pick.ci_low is not None and pick.ci_high is not None
    assert 0 < pick.ci_low < pick.mb_per_s < pick.ci_high
    assert "use concurrency 8" in recommendation_sentence(pick)


def test_a_sweep_has_no_pairwise_comparisons() -> None:
    results = _sweep_results()
    assert analyse(results.experiment, results.runs).pairs == []


def _folder(seconds: float, scale: float = 1.0) -> Results:
    spec = Experiment(name="c", variants=(InlineVariant("asyncio", "asyncio"),), manifests=("100",), scale=scale,
                      runs=4)
    runs = [make_run("asyncio", seconds + d, r) for r, d in enumerate((0.0, 0.05, -0.05, 0.02), start=1)]
    return Results(experiment=spec, runs=runs, environment={"git": {"commit": "abc"}})


def test_compare_finds_a_real_change_and_ignores_noise() -> None:
    (slower,) = change_rows(compare_results(_folder(1.0), _folder(2.0)))
    assert slower[4].startswith("+") and "old ran" in slower[5] and slower[7].startswith("slower: ")
    (same,) = change_rows(compare_results(_folder(1.0), _folder(1.0)))
    assert same[7].startswith("no difference detected")


def test_compare_names_setup_differences() -> None:
    assert setup_differences(_folder(1.0), _folder(1.0, scale=0.5)) == ["scale: 1.0 -> 0.5"]


def test_compare_names_every_setting_that_changes_what_a_cell_means() -> None:
    """runs, warm-ups and the baseline as much as the scale: a folder of 4 runs against one of 10 is no like
    for like, whatever the verdict says."""
    new = _folder(1.0)
    new.experiment = new.experiment.with_overrides(runs=10, warmup=0, baseline="asyncio", alpha=0.01)
    assert setup_differences(_folder(1.0), new) == [
        "runs: 4 -> 10", "warmup: 1 -> 0", "baseline: None -> 'asyncio'", "alpha: 0.05 -> 0.01"]
    renamed = _folder(1.0)
    renamed.experiment = renamed.experiment.with_overrides(name="other", description="words")
    assert setup_differences(_folder(1.0), renamed) == [], "a name and its words change no figure"


def test_compare_names_changed_remote_settings_and_samples() -> None:
    new = _folder(1.0)
    new.experiment = new.experiment.with_overrides(remote={"rate_limit": 100}, sample="10%")
    assert setup_differences(_folder(1.0), new) == ["remote: {} -> {'rate_limit': 100}", "sample: None -> '10%'"]


def test_compare_names_changed_variant_settings() -> None:
    old, new = _folder(1.0), _folder(1.0)
    new.experiment = new.experiment.with_overrides(
        variants=(InlineVariant("asyncio", "asyncio", download_concurrency=100),))
    assert setup_differences(old, new) == ["variant asyncio download_concurrency: 10 -> 100"]


def test_compare_names_the_fields_of_a_variant_whose_kind_changed() -> None:
    """A field only one side's kind has is a difference too (None on the side without it)."""
    old, new = _folder(1.0), _folder(1.0)
    old.experiment = old.experiment.with_overrides(variants=(RqVariant("asyncio", "asyncio", tasking="rq", workers=2),))
    assert setup_differences(old, new) == ["variant asyncio tasking: 'rq' -> 'inline'",
                                           "variant asyncio workers: 2 -> None", "variant asyncio hosts: 0 -> None",
                                           "variant asyncio repositories: 1 -> None"]


def test_cells_in_one_folder_only_are_listed() -> None:
    old = _folder(1.0)
    new = _folder(1.0)
    new.runs = [make_run("asyncio", 1.0, 1, "200")]
    new.experiment = Experiment(name="c", variants=old.experiment.variants, manifests=("200",), runs=1)
    verdicts = {row[0]: row[7] for row in change_rows(compare_results(old, new))}
    assert verdicts == {"200": "only in new", "100": "only in old"}


def test_a_sweep_folder_renders_its_sweep_plot(tmp_path: Path) -> None:
    results = _sweep_results()
    results.experiment = sweep_experiment(["asyncio", "futures"], list(SECONDS), ["100"], runs=3, warmup=0)
    results.runs += [dataclasses.replace(run, variant=run.variant.replace("asyncio", "futures"))
                     for run in results.runs]
    save_run_outputs(tmp_path, results)
    rendered = render(tmp_path)
    assert "sweep" in rendered.plots and (tmp_path / "sweep.png").is_file() and (tmp_path / "sweep.svg").is_file()
    assert not (tmp_path / "futures.png").exists(), "the plot is named for the sweep, not for a downloader"
