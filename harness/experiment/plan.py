"""What an experiment will cost before it starts: syncs, bytes to download, and a refusal above a limit.

A default sweep of a 50 GB repository is 8 concurrencies x 4 runs x 50 GB = 1.6 TB: an operator must
see that before the first byte moves, and a CI must be able to refuse it (`--max-bytes`).

A run of an RQ variant with `repositories = K` makes K syncs, of K samples of its manifest
(harness.variants.fleet); it is counted as the most it can download, when every sync finds none of the others'
files.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.experiment.sample import parse_sample
from harness.experiment.spec import Experiment, SpecError
from harness.results.folder import Results
from harness.results.warning import FigureWarning, Kind
from harness.run.fixture_site import ManifestSource
from harness.run.schedule import PlannedRun, plan
from harness.variants.fleet import download_share

__all__ = ["planned_bytes", "plan_sentence", "plan_warnings", "check_plan", "human_bytes"]


def planned_bytes(experiment: Experiment, sources: Mapping[str, ManifestSource], previous: Results | None) -> int:
    """Bytes the runs still to make will download at most: each run fetches its manifest's files (or sample)
    once, a run of K repositories K samples of them."""
    return round(sum(int(sources[run.manifest].facts["bytes"]) * download_share(_syncs(experiment, run))
                     for run in _todo(experiment, previous)))


def plan_sentence(experiment: Experiment, sources: Mapping[str, ManifestSource], previous: Results | None) -> str:
    """"Plan: 2 manifests x 3 variants x 11 runs (1 warm-up) = 66 syncs, 1.2 GB to download (sample 10%)";
    with repositories synced at once, "= 66 runs of 150 syncs"."""
    todo = len(_todo(experiment, previous))
    rounds = experiment.runs + experiment.warmup
    runs = plan(experiment)
    syncs = sum(_syncs(experiment, run) for run in runs)
    made = f"{len(runs)} syncs" if syncs == len(runs) else f"{len(runs)} runs of {syncs} syncs"
    sample = f" (a {experiment.sample} sample of each manifest)" if experiment.sample else ""
    left = f", {todo} still to make" if previous and previous.runs else ""
    cells = len(experiment.cells)
    some = f" ({cells} of those cells run)" if cells < len(experiment.manifests) * len(experiment.variants) else ""
    return (
        f"Plan: {len(experiment.manifests)} manifest(s) x {len(experiment.variants)} variant(s){some} x {rounds} "
        f"runs ({experiment.warmup} warm-up) = {made}"
        f"{left}, {human_bytes(planned_bytes(experiment, sources, previous))} to download{sample}"
    )


def plan_warnings(experiment: Experiment, sources: Mapping[str, ManifestSource]) -> list[FigureWarning]:
    """What would make a plan measure less than it seems to: a concurrency above the number of files a
    run syncs puts every file in flight at once, so such values cannot differ from one another (auto, which
    finds its own, is no such value)."""
    warnings = []
    for name, source in sources.items():
        files = int(source.facts["files"])
        fixed = {v.download_concurrency for v in experiment.variants_of(name)}
        above = sorted(concurrency for concurrency in fixed if isinstance(concurrency, int) and concurrency > files)
        if above:
            values = ", ".join(map(str, above))
            warnings.append(FigureWarning(
                Kind.PLAN, f"manifest {name}", f"concurrency {values} is above the {files} files each run syncs: "
                "every file is in flight at once, so it cannot differ from less; sync more files (--sample)"))
    return warnings


def check_plan(experiment: Experiment, sources: Mapping[str, ManifestSource], previous: Results | None,
               max_bytes: int | None) -> None:
    """Refuse a plan that downloads more than `max_bytes` (None: no limit), saying how to shrink it."""
    total = planned_bytes(experiment, sources, previous)
    if max_bytes is not None and total > max_bytes:
        raise SpecError(f"the plan downloads {human_bytes(total)}, above --max-bytes {human_bytes(max_bytes)}; "
                        f"{_smaller_sample(experiment.sample, max_bytes / total)}make fewer runs or variants, "
                        "or raise --max-bytes")


def _smaller_sample(sample: str | None, share: float) -> str:
    """"sync a sample (--sample 12%), ": a sample that fits, the one asked (all of each manifest if none)
    scaled by `share`, the part of the plan's bytes --max-bytes allows (a sample's bytes follow its size:
    it is stratified by size); nothing where none under 1% of the files, or under one file, would fit."""
    size = parse_sample(sample) if sample is not None else None
    if size is not None and size.count is not None:
        count = int(size.count * share)
        return f"sync a smaller sample (--sample {count}), " if count >= 1 else ""
    percent = int((size.percent if size is not None and size.percent is not None else 100) * share)
    return f"sync a sample (--sample {percent}%), " if percent >= 1 else ""


def _todo(experiment: Experiment, previous: Results | None) -> list[PlannedRun]:
    """The planned runs not yet in `previous` (a resumed folder)."""
    done = {run.key for run in previous.runs} if previous else set()
    return [run for run in plan(experiment) if run.key not in done]


def _syncs(experiment: Experiment, run: PlannedRun) -> int:
    """How many syncs `run` makes (Variant.syncs_per_run)."""
    return experiment.variant(run.variant).syncs_per_run


def human_bytes(count: float) -> str:
    """SI units, as disks and links are sold: 1.2 GB is 1.2 x 10^9 bytes."""
    for unit in ("B", "kB", "MB", "GB"):
        if count < 1000:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} TB"
