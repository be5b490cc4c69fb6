"""The order of runs: per manifest, rounds of every variant back to back, order alternating.

Variants of one manifest run next to each other (A B, B A, A B, ...) so that drift in the network
or the machine hits them alike, and no variant always runs first after a reset (the seed ran them
"immediately back-to-back"). Warm-up rounds come first and use the same alternation. A round of a
manifest holds the variants that run it (a variant's own `manifests` may leave it out).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.experiment.spec import Experiment
from harness.results.records import RunKey

__all__ = ["PlannedRun", "plan"]


@dataclass(frozen=True)
class PlannedRun:
    """One run to make. `round` counts from 1 within its manifest, warm-up rounds included."""

    manifest: str
    round: int
    position: int
    variant: str
    warmup: bool

    @property
    def key(self) -> RunKey:
        """Identity of the run across a resume."""
        return (self.manifest, self.round, self.variant)


def plan(experiment: Experiment) -> list[PlannedRun]:
    """Every run of the experiment, in the order to make them."""
    rounds = experiment.warmup + experiment.runs
    runs = []
    for manifest in experiment.manifests:
        names = [variant.name for variant in experiment.variants_of(manifest)]
        for round_number in range(1, rounds + 1):
            order = names if round_number % 2 == 1 else names[::-1]
            for position, name in enumerate(order, start=1):
                runs.append(PlannedRun(manifest, round_number, position, name, round_number <= experiment.warmup))
    return runs
