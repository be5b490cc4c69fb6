"""The plan: its refusal above --max-bytes advises a sample that fits, from the one asked; it prices the cells
that run, and warns of a concurrency above the files."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.experiment.plan import _smaller_sample, plan_sentence, plan_warnings, planned_bytes
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
        "download")


def test_auto_is_no_concurrency_above_the_files(tmp_path: Path) -> None:
    variants = (InlineVariant("a", "asyncio", download_concurrency="auto"), InlineVariant("b", "asyncio",
                                                                                          download_concurrency=64))
    spec = Experiment(name="x", variants=variants, manifests=("100",))
    (warning,) = plan_warnings(spec, {"100": ManifestSource("100", tmp_path, tmp_path, {"files": 50, "bytes": 1})})
    assert warning.text.startswith("concurrency 64 is above the 50 files")
