"""What an experiment will cost before it starts: syncs, bytes to download, minutes, and a refusal above a limit.

A default sweep of a 50 GB repository is 8 concurrencies x 4 runs x 50 GB = 1.6 TB: an operator must
see that before the first byte moves, and a CI must be able to refuse it (`--max-bytes`).

Minutes are a model, not a measurement: each run costs `defaults.PLAN_RUN_SECONDS` (the reset before it,
the sync's start and its repository version), and its sync the longer of two bounds, what this machine
does (`defaults.PLAN_FILE_SECONDS` a file, `defaults.PLAN_BYTES_PER_SECOND`: the 2-core reference machine's
loopback, where the client's CPU sets the pace) and what the fixture server's network profile lets through:
every file waits the profile's latency for its first byte, streams at most its per-connection rate, so many
at once, and all of them at most its total rate (less past a `shared` profile's knee). `auto` is priced as
the best fixed value up to its bound (its search costs more); a remote of the operator's own, whose link is
unknown, as this machine alone.

A run of an RQ variant with `repositories = K` makes K syncs, of K samples of its manifest
(harness.variants.fleet); it is counted as the most it can download, when every sync finds none of the others'
files.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from downloaders import defaults as downloader_defaults
from harness import defaults
from harness.experiment.sample import parse_sample
from harness.experiment.spec import Experiment, SpecError
from harness.experiment.variant import Variant
from harness.results.folder import Results
from harness.results.warning import FigureWarning, Kind
from harness.run.fixture_site import ManifestSource, resolve_profile
from harness.run.schedule import PlannedRun, plan
from harness.variants.fleet import download_share

__all__ = [
    "Price", "planned_bytes", "planned_seconds", "priced_variants", "plan_sentence", "plan_warnings", "check_plan",
    "human_bytes", "human_minutes",
]


@dataclass(frozen=True)
class Price:
    """What some runs cost: syncs, bytes downloaded at most, and seconds, about."""

    syncs: int = 0
    bytes: float = 0.0
    seconds: float = 0.0

    def __add__(self, other: Price) -> Price:
        return Price(self.syncs + other.syncs, self.bytes + other.bytes, self.seconds + other.seconds)


def planned_bytes(experiment: Experiment, sources: Mapping[str, ManifestSource], previous: Results | None) -> int:
    """Bytes the runs still to make will download at most: each run fetches its manifest's files (or sample)
    once, a run of K repositories K samples of them."""
    return round(_priced(experiment, sources, previous).bytes)


def planned_seconds(experiment: Experiment, sources: Mapping[str, ManifestSource], previous: Results | None) -> float:
    """Seconds the runs still to make will take, about (the module says how they are priced)."""
    return _priced(experiment, sources, previous).seconds


def priced_variants(experiment: Experiment, sources: Mapping[str, ManifestSource]) -> dict[str, Price]:
    """Each variant's runs, priced: where the time goes (`bench plan`), and which values a plan can spare."""
    prices = {variant.name: Price() for variant in experiment.variants}
    for run in plan(experiment):
        prices[run.variant] += _price(experiment, sources, run)
    return prices


def _priced(experiment: Experiment, sources: Mapping[str, ManifestSource], previous: Results | None) -> Price:
    return sum((_price(experiment, sources, run) for run in _todo(experiment, previous)), Price())


def _price(experiment: Experiment, sources: Mapping[str, ManifestSource], run: PlannedRun) -> Price:
    """One run: its syncs, the most they download, and its time (the reset before it, the sync: the slower of
    this machine and the link)."""
    variant = experiment.variant(run.variant)
    facts = sources[run.manifest].facts
    share = download_share(variant.syncs_per_run)
    files, size = int(facts["files"]) * share, int(facts["bytes"]) * share
    seconds = max(files * defaults.PLAN_FILE_SECONDS + size / defaults.PLAN_BYTES_PER_SECOND,
                  _link_seconds_of(experiment, variant, files, size))
    return Price(variant.syncs_per_run, size, defaults.PLAN_RUN_SECONDS + seconds)


def _link_seconds_of(experiment: Experiment, variant: Variant, files: float, size: float) -> float:
    """The least time the fixture server's link lets `variant` take (0 for a remote of one's own, whose link is
    unknown): at its concurrency, or for auto at the best fixed value up to its bound (and the remote's limit)."""
    if experiment.base_url is not None:
        return 0.0
    profile = resolve_profile(experiment.profile_of(variant), experiment.profiles)
    concurrency = variant.download_concurrency
    if isinstance(concurrency, int):
        return _link_seconds(profile, files, size, min(concurrency, max(1, math.ceil(files))))
    bound = int(experiment.remote_of(variant).get("max_concurrency") or downloader_defaults.MAX_CONCURRENCY)
    if (limit := experiment.connection_limit_of(variant)) is not None:
        bound = min(bound, limit)
    return min(_link_seconds(profile, files, size, in_flight) for in_flight in range(1, bound + 1))


def _link_seconds(profile: Any, files: float, size: float, in_flight: int) -> float:
    """The least time a fixture server with this NetworkProfile takes to serve `files` files of `size`
    bytes in all, `in_flight` at a time: a first-byte wait and the per-connection rate for each file, the
    total rate (at `in_flight`) for all of them."""
    per_connection = profile.per_connection_bps or math.inf
    total = profile.total_rate(in_flight) or math.inf
    return max((files * profile.latency + size / per_connection) / in_flight, size / total)


def plan_sentence(experiment: Experiment, sources: Mapping[str, ManifestSource], previous: Results | None) -> str:
    """"Plan: 2 manifests x 3 variants x 11 runs (1 warm-up) = 66 syncs, 1.2 GB to download (sample 10%),
    about 14 minutes" (harness.experiment.plan's model);
    with repositories synced at once, "= 66 runs of 150 syncs"."""
    todo = len(_todo(experiment, previous))
    price = _priced(experiment, sources, previous)
    rounds = experiment.runs + experiment.warmup
    runs = plan(experiment)
    syncs = sum(experiment.variant(run.variant).syncs_per_run for run in runs)
    made = f"{len(runs)} syncs" if syncs == len(runs) else f"{len(runs)} runs of {syncs} syncs"
    sample = f" (a {experiment.sample} sample of each manifest)" if experiment.sample else ""
    left = f", {todo} still to make" if previous and previous.runs else ""
    cells = len(experiment.cells)
    some = f" ({cells} of those cells run)" if cells < len(experiment.manifests) * len(experiment.variants) else ""
    return (
        f"Plan: {len(experiment.manifests)} manifest(s) x {len(experiment.variants)} variant(s){some} x {rounds} "
        f"runs ({experiment.warmup} warm-up) = {made}"
        f"{left}, {human_bytes(price.bytes)} to download{sample}, {human_minutes(price.seconds)}"
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


def human_bytes(count: float) -> str:
    """SI units, as disks and links are sold: 1.2 GB is 1.2 x 10^9 bytes."""
    for unit in ("B", "kB", "MB", "GB"):
        if count < 1000:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} TB"


def human_minutes(seconds: float) -> str:
    """"under a minute", "about 14 minutes", "about 2.5 hours": an estimate, so rounded."""
    if seconds < 60:
        return "under a minute"
    if seconds < 90 * 60:
        minutes = round(seconds / 60)
        return "about 1 minute" if minutes == 1 else f"about {minutes} minutes"
    return f"about {seconds / 3600:.1f} hours"
