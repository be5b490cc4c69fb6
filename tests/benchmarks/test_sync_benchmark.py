"""pytest-benchmark: one benchmark per installed downloader, a reset before every round.

Not part of the default test command (pyproject ignores tests/benchmarks). Run and compare with

    pytest tests/benchmarks --benchmark-autosave
    pytest tests/benchmarks --benchmark-compare          # against the last saved run

Each round is `pulp-sync sync` in a fresh child process, as the harness runs it, so the timed
figure includes interpreter start-up (about half a second here); the sync's own seconds, the
seed's runtime, are in each benchmark's extra_info. Environment: PULP_SYNC_BENCH_SCALE (default
0.05), PULP_SYNC_BENCH_MANIFEST (default 100), PULP_SYNC_BENCH_PROFILE (default loopback).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from downloaders.registry import available
from fixtures.profiles import PROFILES
from fixtures.server import serve_in_background
from harness.experiment.spec import Experiment, manifest_path
from harness.experiment.variant import InlineVariant
from harness.run.fixture_site import prepare_tree
from harness.variants import pulp_sync_cli

SCALE = float(os.environ.get("PULP_SYNC_BENCH_SCALE", "0.05"))
MANIFEST = os.environ.get("PULP_SYNC_BENCH_MANIFEST", "100")
PROFILE = os.environ.get("PULP_SYNC_BENCH_PROFILE", "loopback")
ROUNDS = 10


@pytest.fixture(scope="session")
def manifest_url() -> Iterator[str]:
    """The benchmark manifest on a fixture server (tree generated once per scale, then reused)."""
    spec = Experiment(name="bench", variants=(InlineVariant("x", "asyncio"),), manifests=(MANIFEST,), scale=SCALE)
    root = prepare_tree(spec)
    with serve_in_background(root, profile=PROFILES[PROFILE]) as server:
        yield server.url + manifest_path(MANIFEST)


@pytest.mark.parametrize("downloader", sorted(available()))
def test_sync(benchmark: Any, downloader: str, manifest_url: str, tmp_path: Path) -> None:
    variant = InlineVariant(downloader, downloader)
    env = pulp_sync_cli.child_env(variant, tmp_path / "state")
    seconds: list[float] = []

    def reset() -> None:
        pulp_sync_cli.reset(env)

    def sync() -> None:
        child = pulp_sync_cli.sync(manifest_url, variant, env, timeout=3600)
        assert child.returncode == 0, child.stderr
        seconds.append(json.loads(child.stdout.strip().splitlines()[-1])["seconds"])

    benchmark.pedantic(sync, setup=reset, rounds=ROUNDS, iterations=1)
    benchmark.extra_info.update(
        downloader=downloader, manifest=MANIFEST, scale=SCALE, profile=PROFILE,
        sync_seconds=seconds, sync_seconds_mean=sum(seconds) / len(seconds),
    )
