"""Helpers for the harness tests: specs for the tiny tree, the real command line, synthetic runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.results.records import RunRecord

TINY_SCALE = 0.005
"""About 2 MB for the 100 set: a sync takes well under a second, so a run is mostly process start-up."""


def write_spec(folder: Path, tree: Path, body: str, name: str = "tiny") -> Path:
    """A spec file for `tree` whose experiment-level settings and variants are in `body`."""
    path = folder / f"{name}.toml"
    path.write_text(f'name = "{name}"\nscale = {TINY_SCALE}\nfixtures = "{tree}"\nmanifests = ["100"]\n{body}')
    return path


def run_bench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m harness ARGS` as a user runs it; output captured, failure shown with its stderr."""
    command = [sys.executable, "-m", "harness", *args]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


def make_run(variant: str, seconds: float | None, round_: int = 1, manifest: str = "100", **changes: Any) -> RunRecord:
    """A synthetic successful run record (or a failed one with ok=False, error=...)."""
    values: dict[str, Any] = dict(
        manifest=manifest, round=round_, position=1, variant=variant, warmup=False, started_at="2026-01-01T00:00:00",
        ok=True, error=None, returncode=0, sync_seconds=seconds, wall_seconds=(seconds or 0) + 0.5,
        user_seconds=0.3, system_seconds=0.1, peak_rss_mb=100.0, voluntary_switches=10, involuntary_switches=2,
        reset_seconds=0.7, bytes_downloaded=10_000_000, artifacts_downloaded=100, artifacts_skipped=0,
        content_units=100, retries=0, failures=0, mb_per_s=None, latency_p50=0.01, latency_p90=0.02,
        latency_p99=0.03, downloader=variant, concurrency=10,
    )
    values.update(changes)
    return RunRecord(**values)
