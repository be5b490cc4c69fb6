"""`bench compare --fail-on-regression` and `--json` on synthetic results folders, via the real command line."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from harness.cli import bench_group
from harness.experiment.spec import Experiment, Variant
from harness.results.folder import Results
from harness.results.outputs import save_run_outputs
from tests.harness.helpers import make_run


def _noisy(mean: float, stdev: float, runs: int, seed: int) -> list[float]:
    """Reproducible normal sync times: the same seed gives the same noise."""
    rng = random.Random(seed)
    return [mean + rng.gauss(0, stdev) for _ in range(runs)]


def _folder(path: Path, seconds: Sequence[float]) -> Path:
    """A results folder of one cell, 100 x asyncio, whose counted runs took `seconds`."""
    spec = Experiment(name="gate", variants=(Variant("asyncio", "asyncio"),), manifests=("100",), runs=len(seconds))
    runs = [make_run("asyncio", value, round_) for round_, value in enumerate(seconds, start=1)]
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
    assert "slower by" in result.stdout, "the table is printed before the verdict"


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
    assert cell["percent_change"] > 40


def test_json_holds_every_cell_and_the_gate(tmp_path: Path) -> None:
    result = _compare(tmp_path, _noisy(1.0, 0.01, 10, 1), _noisy(1.2, 0.01, 10, 2),
                      "--json", "--fail-on-regression", "5")
    assert result.exit_code == 3
    document = json.loads(result.stdout)
    assert document["setup_differences"] == [] and document["fail_on_regression_percent"] == 5
    cell = _cell(result)
    assert (cell["manifest"], cell["variant"], cell["faster"], cell["significant"], cell["regression"]) == (
        "100", "asyncio", "old", True, True)
    assert cell["verdict"] == "slower" and cell["verdict_text"].startswith("slower by 2") and cell["p_value"] < 0.001
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
    assert all(f"  {code}  " in text for code in "0123")


def test_a_folder_without_results_is_an_error(tmp_path: Path) -> None:
    new = _folder(tmp_path / "new", [1.0, 1.1])
    result = CliRunner().invoke(bench_group, ["compare", str(tmp_path), str(new), "--fail-on-regression", "5"])
    assert result.exit_code == 1 and "holds no results.json" in result.output
