"""The run order: rounds per manifest, warm-ups first, variant order alternating."""

from __future__ import annotations

from harness.experiment.spec import Experiment
from harness.experiment.variant import InlineVariant
from harness.run.schedule import plan


def _experiment(variants: int = 2, runs: int = 3, warmup: int = 1) -> Experiment:
    names = "ABC"[:variants]
    return Experiment(name="x", variants=tuple(InlineVariant(n, "asyncio") for n in names), manifests=("100", "200"),
                      runs=runs, warmup=warmup)


def test_rounds_alternate_the_order_of_the_variants() -> None:
    runs = [r for r in plan(_experiment()) if r.manifest == "100"]
    assert [r.variant for r in runs] == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert [r.position for r in runs] == [1, 2] * 4


def test_warmups_come_first_and_are_marked() -> None:
    runs = [r for r in plan(_experiment()) if r.manifest == "100"]
    assert [r.warmup for r in runs] == [True, True] + [False] * 6


def test_one_manifest_is_finished_before_the_next() -> None:
    runs = plan(_experiment(variants=3, runs=2, warmup=0))
    manifests = [r.manifest for r in runs]
    assert manifests == ["100"] * 6 + ["200"] * 6
    assert [r.variant for r in runs[:6]] == ["A", "B", "C", "C", "B", "A"]


def test_every_run_has_its_own_key() -> None:
    runs = plan(_experiment(variants=3, runs=4, warmup=2))
    assert len({r.key for r in runs}) == len(runs) == 2 * 3 * 6


def test_a_round_holds_only_the_variants_that_run_its_manifest() -> None:
    """A variant's own `manifests` leave it out of the other manifests' rounds, which alternate among the rest."""
    variants = (InlineVariant("A", "asyncio"), InlineVariant("B", "asyncio", manifests=("200",)),
                InlineVariant("C", "asyncio"))
    runs = plan(Experiment(name="x", variants=variants, manifests=("100", "200"), runs=2, warmup=0))
    assert [(r.manifest, r.variant, r.position) for r in runs] == [
        ("100", "A", 1), ("100", "C", 2), ("100", "C", 1), ("100", "A", 2),
        ("200", "A", 1), ("200", "B", 2), ("200", "C", 3), ("200", "C", 1), ("200", "B", 2), ("200", "A", 3)]
