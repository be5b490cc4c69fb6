"""The harness's verdicts on real runs: an A/A test is "not significant", a slowed variant is.

Under the null hypothesis a test at alpha = 0.05 is "significant" in 5% of A/A experiments by
construction; the A/A test therefore runs a second, independent experiment when the first one says
"significant" and fails only if both do (probability 0.25% when the harness is right).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.helpers import run_bench, write_spec

A_A = """
runs = 5
warmup = 0
profile = "loopback"

[[variants]]
name = "first"
downloader = "asyncio"

[[variants]]
name = "second"
downloader = "asyncio"
"""

SLOWED = """
runs = 3
warmup = 0
profile = "loopback"
baseline = "normal"

[profiles.throttled]
base = "loopback"
latency = 0.1
per_connection_bps = 500000

[[variants]]
name = "normal"
downloader = "asyncio"

[[variants]]
name = "slowed"
downloader = "asyncio"
profile = "throttled"
"""


def _experiment(work: Path, tree: Path, body: str, out: str) -> dict[str, object]:
    spec = write_spec(work, tree, body)
    run_bench("run", str(spec), "--out", str(work / out), "--state-dir", str(work / "state"), "--quiet", cwd=work)
    (pair,) = json.loads((work / out / "results.json").read_text())["statistics"]["pairs"]
    return pair


@pytest.mark.slow
def test_the_same_downloader_twice_is_not_significant(tiny_tree: Path, tmp_path: Path) -> None:
    out = "first"
    pair = _experiment(tmp_path, tiny_tree, A_A, out)
    if pair["comparison"]["significant"]:
        out = "second"
        pair = _experiment(tmp_path, tiny_tree, A_A, out)
    assert pair["comparison"]["p_value"] is not None
    assert not pair["comparison"]["significant"], pair
    assert pair["comparison"]["verdict"] == "no difference"
    assert "no difference detected (a difference below" in (tmp_path / out / "summary.md").read_text()
    assert '<span class="no-difference">no difference detected' in (tmp_path / out / "report.html").read_text()


@pytest.mark.slow
def test_a_throttled_variant_is_significantly_slower(tiny_tree: Path, tmp_path: Path) -> None:
    pair = _experiment(tmp_path, tiny_tree, SLOWED, "out")
    comparison = pair["comparison"]
    assert pair["variant"] == "slowed" and pair["baseline"] == "normal"
    assert comparison["significant"] and comparison["faster"] == "baseline" and comparison["percent_change"] > 0
    assert comparison["verdict"] == "slower" and comparison["ratio_ci"][0] > 1
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "normal ran" in summary and "times faster than slowed [95% CI" in summary and "slower: " in summary
    report = (tmp_path / "out" / "report.html").read_text()
    assert '<span class="slower">slower: ' in report, "a slowdown is drawn red, not green"
