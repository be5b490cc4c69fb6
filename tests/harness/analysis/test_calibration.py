"""`bench calibrate`: real A/A experiments on the tiny tree, the stored calibration, and the report that quotes it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.analysis.calibration import Calibration, quote
from tests.harness.helpers import run_bench, write_spec

pytestmark = pytest.mark.slow


def test_calibrate_counts_false_alarms_and_a_later_report_quotes_it(tiny_tree: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, tiny_tree, '[[variants]]\nname = "a"\ndownloader = "asyncio"\n')
    common = ["--results-dir", str(tmp_path / "results"), "--state-dir", str(tmp_path / "state"), "--quiet"]
    done = run_bench("calibrate", str(spec), "--experiments", "2", "--runs", "3", "--warmup", "0", *common,
                     cwd=tmp_path)
    assert "2 A/A experiments (2 comparisons):" in done.stdout and "typical CV 100:" in done.stdout
    stored = json.loads((tmp_path / "results" / "calibration.json").read_text())
    assert stored["comparisons"] == 2 and 0 <= stored["false_alarms"] <= 2
    assert stored["mde_percent"]["100"] > 0 and stored["machine"]["cpu_count"]

    spec = write_spec(tmp_path, tiny_tree, 'runs = 2\nwarmup = 0\n[[variants]]\nname = "a"\ndownloader = "asyncio"\n'
                      '[[variants]]\nname = "b"\ndownloader = "futures"\n', name="later")
    run_bench("run", str(spec), *common, cwd=tmp_path)
    (report,) = (tmp_path / "results").glob("*-later/report.html")
    text = report.read_text()
    assert "Calibration of " in text and "2 A/A experiments (2 comparisons)" in text and "Caution" not in text


def _calibration(**changes: object) -> Calibration:
    values: dict[str, object] = dict(
        made_at="2026-11-25 10:00", made_at_epoch=time.time(), machine={"hostname": "h", "cpu_model": "m",
                                                                        "cpu_count": 2},
        setup={"scale": 0.05, "profile": "wan", "runs": 5, "downloader": "asyncio", "alpha": 0.05},
        experiments=6, comparisons=12, false_alarms=1, cv={"100": 0.031}, mde_percent={"100": 4.2})
    values.update(changes)
    return Calibration(**values)  # type: ignore[arg-type]


def test_a_calibration_from_another_machine_or_long_ago_is_quoted_with_a_caution() -> None:
    here = {"hostname": "h", "cpu_model": "m", "cpu_count": 2}
    assert "1 called different (8%" in quote(_calibration(), here) and "CV 100: 3.1%" in quote(_calibration(), here)
    assert "Caution" not in quote(_calibration(), here)
    assert "made on another machine (h, m)" in quote(_calibration(), {**here, "hostname": "elsewhere"})
    assert "40 days old" in quote(_calibration(made_at_epoch=time.time() - 40 * 86400), here)
    assert quote(None, here).startswith("No calibration on this machine")
