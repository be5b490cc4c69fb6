"""`bench compare --fail-on-regression` and `--json` on synthetic results folders, via the real command line."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from harness.analysis.derived import save_run_outputs
from harness.cli import bench_group
from harness.experiment.spec import Experiment
from harness.experiment.variant import InlineVariant
from harness.results.folder import Results
from tests.harness.helpers import make_run


def _noisy(mean: float, stdev: float, runs: int, seed: int) -> list[float]:
    """Reproducible normal sync times: the same seed gives the same noise."""
    rng = random.Random(seed)
    return [mean + rng.gauss(0, stdev) for _ in range(runs)]


def _folder(path: Path, seconds: Sequence[float | None], variants: Sequence[str] = ("asyncio",)) -> Path:
    """A results folder of `variants` on the 100 manifest, each of whose runs took `seconds` (None: the
    run failed)."""
    spec = Experiment(name="gate", variants=tuple(InlineVariant(name, "asyncio") for name in variants),
                      manifests=("100",), runs=len(seconds))
    runs = [make_run(name, value, round_, ok=value is not None, error=None if value else "Error: boom")
            for name in variants for round_, value in enumerate(seconds, start=1)]
    path.mkdir()
    save_run_outputs(path, Results(experiment=spec, runs=runs))
    return path


def _compare(tmp_path: Path, old: Sequence[float], new: Sequence[float], *flags: str) -> Result:
    return CliRunner().invoke(bench_group, ["compare", str(_folder(tmp_path / "old", old)),
                                            str(_folder(tmp_path / "new", new)), *flags])


def _cell(result: Result) -> dict[str, Any]:
    """The one cell of `--json` output (which must be nothing but the JSON object)."""
    (cell,) = json.loads(result.stdout)["cells"]
    return cell


def test_a_significant_slowdown_beyond_the_threshold_exits_3_and_names_the_cell(tmp_path: Path) -> None:
    result = _compare(tmp_path, _noisy(1.0, 0.01, 10, 1), _noisy(1.2, 0.01, 10, 2), "--fail-on-regression", "5")
    assert result.exit_code == 3, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("Regression: 100 asyncio +2") and line.endswith("beyond 5%")
    assert "slower: " in result.stdout, "the table is printed before the verdict"


def test_an_a_a_pair_passes(tmp_path: Path) -> None:
    same = _noisy(1.0, 0.05, 10, 1)
    result = _compare(tmp_path, same, same, "--fail-on-regression", "5")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def test_a_significant_slowdown_below_the_threshold_passes(tmp_path: Path) -> None:
    old, new = _noisy(1.0, 0.002, 10, 1), _noisy(1.02, 0.002, 10, 2)
    result = _compare(tmp_path, old, new, "--fail-on-regression", "5", "--json")
    assert result.exit_code == 0, result.output
    cell = _cell(result)
    assert cell["significant"] is True and cell["regression"] is False
    assert 1 < cell["percent_change"] < 3


def test_a_large_slowdown_within_noise_passes(tmp_path: Path) -> None:
    result = _compare(tmp_path, [0.5, 1.0, 3.0], [0.6, 1.5, 4.5], "--fail-on-regression", "5", "--json")
    assert result.exit_code == 0, result.output
    cell = _cell(result)
    assert cell["significant"] is False and cell["regression"] is False
    assert cell["percent_change"] == pytest.approx((2.7 ** (1 / 3) - 1) * 100), "the geometric means' change"


def test_json_holds_every_cell_and_the_gate(tmp_path: Path) -> None:
    result = _compare(tmp_path, _noisy(1.0, 0.01, 10, 1), _noisy(1.2, 0.01, 10, 2),
                      "--json", "--fail-on-regression", "5")
    assert result.exit_code == 3
    document = json.loads(result.stdout)
    assert document["setup_differences"] == [] and document["fail_on_regression_percent"] == 5
    cell = _cell(result)
    assert (cell["manifest"], cell["variant"], cell["faster"], cell["significant"], cell["regression"]) == (
        "100", "asyncio", "old", True, True)
    assert cell["verdict"] == "slower" and cell["verdict_text"].startswith("slower: 2") and cell["p_value"] < 0.001
    assert 0.95 < cell["old_mean_seconds"] < 1.05 and 1.15 < cell["new_mean_seconds"] < 1.25
    assert set(cell) >= {"percent_change", "ratio", "ratio_ci", "p_value_adjusted", "mde_percent"}
    assert cell["ratio_ci"][0] < cell["ratio"] < cell["ratio_ci"][1]


def test_json_without_a_gate_leaves_regression_open_and_exits_0(tmp_path: Path) -> None:
    result = _compare(tmp_path, _noisy(1.0, 0.01, 10, 1), _noisy(1.2, 0.01, 10, 2), "--json")
    assert result.exit_code == 0
    assert _cell(result)["regression"] is None and result.stderr == ""


def test_a_negative_threshold_is_a_usage_error(tmp_path: Path) -> None:
    result = _compare(tmp_path, [1.0, 1.1], [1.0, 1.1], "--fail-on-regression", "-1")
    assert result.exit_code == 2 and "--fail-on-regression" in result.output


def test_help_lists_the_exit_codes() -> None:
    text = CliRunner().invoke(bench_group, ["compare", "--help"]).output
    assert all(f"  {code}  " in text for code in "0123456")


def test_a_new_folder_whose_runs_all_failed_fails_the_gate(tmp_path: Path) -> None:
    result = _compare(tmp_path, _noisy(1.0, 0.01, 10, 1), [None] * 10, "--fail-on-regression", "5")
    assert result.exit_code == 6, result.output
    assert result.stderr == "NEW has failed runs: 100 x asyncio: 10 of 10 counted runs failed\n"


def test_some_failed_runs_fail_the_gate_even_without_a_regression(tmp_path: Path) -> None:
    same = _noisy(1.0, 0.01, 10, 1)
    result = _compare(tmp_path, same, [*same[:9], None], "--fail-on-regression", "5")
    assert (result.exit_code, result.stderr) == (6, "NEW has failed runs: 100 x asyncio: 1 of 10 counted runs failed\n")


def test_folders_with_nothing_in_common_fail_the_gate(tmp_path: Path) -> None:
    """A sweep's folder (its variants named by value) against a run's: no cell matches."""
    old = _folder(tmp_path / "old", _noisy(1.0, 0.01, 5, 1), ["asyncio-c4", "asyncio-c8"])
    new = _folder(tmp_path / "new", _noisy(1.0, 0.01, 5, 2))
    result = CliRunner().invoke(bench_group, ["compare", str(old), str(new), "--fail-on-regression", "5"])
    assert result.exit_code == 4, result.output
    assert result.stderr == ("Nothing compared: no manifest x variant of OLD (100 x asyncio-c4; 100 x asyncio-c8) "
                             "is in NEW (100 x asyncio)\n")


def test_a_cell_missing_from_new_fails_the_gate(tmp_path: Path) -> None:
    old = _folder(tmp_path / "old", _noisy(1.0, 0.01, 5, 1), ["asyncio", "futures"])
    new = _folder(tmp_path / "new", _noisy(1.0, 0.01, 5, 1))
    result = CliRunner().invoke(bench_group, ["compare", str(old), str(new), "--fail-on-regression", "5", "--json"])
    assert result.exit_code == 5, result.output
    assert result.stderr == "NEW lacks cells OLD measured: 100 x futures\n"
    assert json.loads(result.stdout)["gate"] == [{"status": 5, "line": "NEW lacks cells OLD measured: 100 x futures"}]


def test_a_row_says_one_percentage_the_change_its_verdict_states(tmp_path: Path) -> None:
    """One slow run in NEW: the change of the means (+38%) and of the geometric means (+31%) differ."""
    old = _noisy(1.0, 0.005, 10, 1)
    new = [1.2 * seconds for seconds in _noisy(1.0, 0.005, 9, 2)] + [3.0]
    result = _compare(tmp_path, old, new, "--format", "markdown")
    assert result.exit_code == 0, result.output
    header, rule, row = result.stdout.splitlines()[2:5]
    assert header.startswith("| manifest | variant | old (s) | new (s) | change |") and rule.startswith("|---|")
    change, verdict = row.split(" | ")[4], row.split(" | ")[7]
    assert change.startswith("+31.") and verdict.startswith(f"slower: {change[1:]} more time"), row


def test_markdown_carries_the_gate_for_a_pull_request(tmp_path: Path) -> None:
    result = _compare(tmp_path, _noisy(1.0, 0.01, 10, 1), _noisy(1.2, 0.01, 10, 2), "--format", "markdown",
                      "--fail-on-regression", "5")
    assert result.exit_code == 3
    assert result.stdout.startswith("### old -> new\n\n| manifest |")
    assert "- **Regression: 100 asyncio +2" in result.stdout


def test_a_folder_without_results_is_an_error(tmp_path: Path) -> None:
    new = _folder(tmp_path / "new", [1.0, 1.1])
    result = CliRunner().invoke(bench_group, ["compare", str(tmp_path), str(new), "--fail-on-regression", "5"])
    assert result.exit_code == 1 and "holds no results.json" in result.output
