"""The plan: its refusal above --max-bytes advises a sample that fits, from the one asked; it prices the cells
that run, in bytes and in minutes (the slower of this machine and the link), and warns of a concurrency above
the files."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import defaults
from harness.experiment.plan import (
    _smaller_sample,
    human_minutes,
    plan_sentence,
    plan_warnings,
    planned_bytes,
    planned_seconds,
    priced_variants,
)
from harness.experiment.spec import Experiment
from harness.experiment.variant import InlineVariant
from harness.run.fixture_site import ManifestSource


@pytest.mark.parametrize(("sample", "share", "advice"), [
    (None, 0.12, "sync a sample (--sample 12%), "),
    ("30%", 0.5, "sync a sample (--sample 15%), "),
    ("30%", 0.9, "sync a sample (--sample 27%), "),
    ("500", 0.5, "sync a smaller sample (--sample 250), "),
    (None, 0.004, ""),
    ("1", 0.5, ""),
])
def test_the_advised_sample_is_the_asked_one_scaled_to_fit(sample: str | None, share: float, advice: str) -> None:
    """At --sample 30% the advice was "(--sample 10%)" whatever the limit; now it scales what was asked."""
    assert _smaller_sample(sample, share) == advice


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine priced in round figures: 2 s a run besides its sync, 10 ms a file, 100 MB/s."""
    monkeypatch.setattr(defaults, "PLAN_RUN_SECONDS", 2.0)
    monkeypatch.setattr(defaults, "PLAN_FILE_SECONDS", 0.01)
    monkeypatch.setattr(defaults, "PLAN_BYTES_PER_SECOND", 100e6)


def _sources(tmp_path: Path, files: int, size: int) -> dict[str, ManifestSource]:
    return {"100": ManifestSource("100", tmp_path, tmp_path, {"files": files, "bytes": size})}


def test_a_run_is_priced_at_the_slower_of_this_machine_and_its_link(tmp_path: Path, machine: None) -> None:
    """100 files, 100 MB. Behind wan (40 ms to the first byte, 8 MB/s a connection, 100 MB/s in all), one at
    a time: 100 x 40 ms + 100 MB / 8 MB/s = 16.5 s; 64 at once: 1 s at the total rate, below this machine's
    100 x 10 ms + 1 s = 2 s. On loopback, unshaped, this machine's 2 s. Each run adds 2 s."""
    sources = _sources(tmp_path, 100, 100_000_000)
    for profile, concurrency, sync in (("wan", 1, 16.5), ("wan", 64, 2.0), ("loopback", 1, 2.0)):
        variant = InlineVariant("v", "asyncio", download_concurrency=concurrency, profile=profile)
        spec = Experiment(name="x", variants=(variant,), manifests=("100",), runs=2, warmup=1)
        assert planned_seconds(spec, sources, None) == pytest.approx(3 * (2.0 + sync)), (profile, concurrency)


def test_auto_is_priced_at_the_best_fixed_value_its_bound_and_the_remotes_limit_allow(
        tmp_path: Path, machine: None) -> None:
    """1,000 files behind slow's latency (150 ms to the first byte, 1 MB/s a connection): the more at once the
    better, so auto is priced at 64 (its bound: this machine's 10.1 s are then the slower), at 8 under
    max_concurrency 8, and at 4 on a remote that allows 4 connections."""
    sources = _sources(tmp_path, 1000, 10_000_000)
    limited = {"limited": {"base": "slow", "max_connections": 4}}
    spec = Experiment(name="x", manifests=("100",), runs=1, warmup=0, profiles=limited, variants=(
        InlineVariant("auto", "asyncio", download_concurrency="auto", profile="slow"),
        InlineVariant("auto8", "asyncio", download_concurrency="auto", profile="slow",
                      remote={"max_concurrency": 8}),
        InlineVariant("limited", "asyncio", download_concurrency="auto", profile="limited"),
    ))
    link = {in_flight: (1000 * 0.150 + 10_000_000 / 1e6) / in_flight for in_flight in (64, 8, 4)}
    prices = priced_variants(spec, sources)
    assert prices["auto"].seconds == pytest.approx(2.0 + 1000 * 0.01 + 0.1)
    assert link[64] < 1000 * 0.01 + 0.1
    assert prices["auto8"].seconds == pytest.approx(2.0 + link[8])
    assert prices["limited"].seconds == pytest.approx(2.0 + link[4])


def test_a_remote_of_ones_own_is_priced_as_this_machine_alone(tmp_path: Path, machine: None) -> None:
    variant = InlineVariant("v", "asyncio", download_concurrency=1, profile="slow")
    spec = Experiment(name="x", variants=(variant,), manifests=("100",), runs=1, warmup=0,
                      base_url="https://remote.example/repo/")
    assert planned_seconds(spec, _sources(tmp_path, 100, 100_000_000), None) == pytest.approx(2.0 + 2.0)


@pytest.mark.parametrize(("seconds", "words"), [
    (0.2, "under a minute"), (59, "under a minute"), (60, "about 1 minute"), (89, "about 1 minute"),
    (90, "about 2 minutes"), (14 * 60, "about 14 minutes"), (89 * 60, "about 89 minutes"),
    (150 * 60, "about 2.5 hours"),
])
def test_minutes_are_rounded_as_an_estimate_is(seconds: float, words: str) -> None:
    assert human_minutes(seconds) == words


def test_the_plan_prices_only_the_cells_that_run(tmp_path: Path) -> None:
    """The many-small manifest on one link only: its syncs and bytes are the one variant's that runs it."""
    variants = (InlineVariant("wan", "asyncio", profile="wan"),
                InlineVariant("lan", "asyncio", profile="lan", manifests=("100",)))
    spec = Experiment(name="x", variants=variants, manifests=("100", "many-small"), runs=2, warmup=1)
    sources = {name: ManifestSource(name, tmp_path, tmp_path, {"files": files, "bytes": size})
               for name, files, size in (("100", 100, 1_000_000), ("many-small", 10_000, 20_000_000))}
    assert planned_bytes(spec, sources, None) == 3 * (1_000_000 * 2 + 20_000_000)
    assert plan_sentence(spec, sources, None) == (
        "Plan: 2 manifest(s) x 2 variant(s) (3 of those cells run) x 3 runs (1 warm-up) = 9 syncs, 66.0 MB to "
        f"download, {human_minutes(planned_seconds(spec, sources, None))}")


def test_auto_is_no_concurrency_above_the_files(tmp_path: Path) -> None:
    variants = (InlineVariant("a", "asyncio", download_concurrency="auto"), InlineVariant("b", "asyncio",
                                                                                          download_concurrency=64))
    spec = Experiment(name="x", variants=variants, manifests=("100",))
    (warning,) = plan_warnings(spec, {"100": ManifestSource("100", tmp_path, tmp_path, {"files": 50, "bytes": 1})})
    assert warning.text.startswith("concurrency 64 is above the 50 files")
