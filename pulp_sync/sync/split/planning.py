"""One sync's downloads split across processes on this host ("shards"), into one store and one version.

    the parent: plan (the spool of what the store lacks) ─> split it into shards ─> one child per shard
    each child: download, verify, adopt and record its artifacts (pulp_sync.sync.split.forked)
    the parent: sums their progress, stops them all at the first failure, then builds the one version

Why processes: a sync is one Python process, and on many small files its per-file work (a request, a
hash, a rename, a row) holds one core; the same files split over 4–8 processes by hand synced 3–4×
faster on a 16-core machine (issue 26). The parent keeps the repository's lock for the whole sync and
takes none of the children's work: they record artifacts, which need no lock, and only the parent
makes the version.

The remote's `download_concurrency` and `rate_limit` are the whole sync's budget, however many processes
share it (issue 32: each process with the whole of it sent a gentle remote twice the requests its
operator allowed). The budget is divided, not shared through Redis: each shard's downloader gets its own
part as its DownloaderSettings (`budget_share`: the connections split as evenly as whole numbers go, at
least one each, and the rate in equal parts), so a plugin sees only its share and no request waits on a
round-trip to anything, whichever host runs the shard. The price: a shard that ends early leaves its part
idle until the sync ends, rather than lending it to the others. There are never more processes than the
budget has connections (`most_processes`).

This module decides how many processes (`how_many`), what each does (`split`) and with what part of the
remote's budget (`budget_share`). A shard is a contiguous range of digests (MariaDB's gap locks make
interleaved inserts from several processes deadlock-prone; ranges keep each shard's rows apart), cut so
that the shards carry about the same weight: bytes plus a fixed cost per file
(`defaults.SHARD_FILE_WEIGHT`). Two passes over the spool with a histogram of 65,536 digest prefixes
keep the parent's memory flat however long the manifest.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from downloaders import DownloaderSettings
from downloaders.defaults import MAX_SECONDS
from pulp_base.download_processes import AUTO, usable_cpus
from pulp_sync import defaults
from pulp_sync.sync.spool import parse_line, read_spool

__all__ = [
    "Shard",
    "ShardCounts",
    "ShardFailed",
    "ShardStopped",
    "how_many",
    "most_processes",
    "budget_share",
    "together",
    "split",
    "shard_prefix",
]

_PREFIX_HEX = 4
"""Digest prefixes (hex digits) the split's histogram counts by: 16^4 buckets, a flat 1 MB of counters."""


def how_many(setting: int, files: int, size: int, most: int, cpus: int | None = None) -> int:
    """How many processes a sync of `files` missing files of `size` bytes in all uses: the setting
    (pulp_base.download_processes), never more than the files nor than `most` (the remote's budget allows:
    `most_processes`); with AUTO, one per usable CPU, but no more than one per
    `defaults.AUTO_FILES_PER_PROCESS` files or `defaults.AUTO_BYTES_PER_PROCESS` bytes, whichever allows
    more (their docstrings say why)."""
    if files <= 1:
        return 1
    if setting != AUTO:
        return min(setting, files, most)
    worth = max(files // defaults.AUTO_FILES_PER_PROCESS, size // defaults.AUTO_BYTES_PER_PROCESS)
    return max(1, min(usable_cpus() if cpus is None else cpus, worth, files, most))


def most_processes(settings: DownloaderSettings) -> int:
    """The most processes the remote's budget divides among (`budget_share`): one connection each (of its
    `download_concurrency`, or of its `max_concurrency` when the limit is found while syncing), and a rate
    each that an engine takes (at least one start in `MAX_SECONDS`, downloaders/settings.py's rule)."""
    if settings.rate_limit is None:
        return settings.concurrency_bound
    return max(1, min(settings.concurrency_bound, int(settings.rate_limit * MAX_SECONDS)))


def budget_share(settings: DownloaderSettings, index: int, count: int) -> DownloaderSettings:
    """Shard `index` of `count`'s part of the remote's budget (the module says why it is divided): the
    connections as evenly as whole numbers go (the first shards get one more), the rate in equal parts;
    the parts add up to the whole. `count` is at most `most_processes(settings)`.

    With `auto_concurrency` the connections divided are `max_concurrency`, and each shard's controller finds
    its own limit within its part (downloaders.concurrency): the shards share one link, so each sees the
    others' load in its goodput and settles beside them, and no download waits on a slot handed out by
    another process (docs/cli.md says more)."""
    whole, extra = divmod(settings.concurrency_bound, count)
    connections = whole + (index < extra)
    rate = None if settings.rate_limit is None else settings.rate_limit / count
    if settings.auto_concurrency:
        fallback = min(settings.download_concurrency, connections)
        return replace(settings, max_concurrency=connections, download_concurrency=fallback, rate_limit=rate)
    return replace(settings, download_concurrency=connections, rate_limit=rate)


def together(trajectories: Sequence[Sequence[Sequence[float]]]) -> list[tuple[float, int]]:
    """The sync's concurrency over time from its shards' (each a list of `(seconds, limit)` changes from the
    start of the shard's downloads): at each change of any of them, the sum of their limits then."""
    changes = sorted((seconds, shard, order, int(limit)) for shard, trajectory in enumerate(trajectories)
                     for order, (seconds, limit) in enumerate(trajectory))
    current: dict[int, int] = {}
    merged: list[tuple[float, int]] = []
    for seconds, shard, _, limit in changes:
        current[shard] = limit
        total = sum(current.values())
        if merged and merged[-1][0] == seconds:
            merged[-1] = (seconds, total)
        elif not merged or merged[-1][1] != total:
            merged.append((seconds, total))
    return merged


@dataclass(frozen=True)
class Shard:
    """One process's share of a sync: its spool (the same lines as the sync's) and what it holds."""

    index: int
    spool: Path
    files: int
    bytes: int


@dataclass
class ShardCounts:
    """What a shard reports at its end, besides the files and bytes its progress counted: the sync's
    tally adds them up."""

    retries: int = 0
    failures: int = 0
    latencies: list[float] = field(default_factory=list)
    slot_waits: list[float] = field(default_factory=list)
    trajectory: list[tuple[float, int]] = field(default_factory=list)
    """The shard's concurrency limits over its downloads' time, `(seconds, limit)` at each change."""
    settled: int = 0
    """The limit it spent the most time at (0: its downloader keeps no record)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


class ShardStopped(Exception):
    """What a shard's work raises to stop with a sentence of its own (a download that failed for good),
    with what it did until then; any other exception is reported by its type and message."""

    def __init__(self, message: str, counts: ShardCounts) -> None:
        super().__init__(message)
        self.counts = counts


class ShardFailed(Exception):
    """A shard did not finish: it reported a failure, or its process ended without a word. The message
    names the shard, its process and why; `counts` is what it reported, if anything (the sync's tally
    adds it)."""

    def __init__(self, shard: int, count: int, pid: int, reason: str, counts: ShardCounts | None) -> None:
        super().__init__(f"shard {shard + 1} of {count} (process {pid}) failed: {reason}")
        self.counts = counts or ShardCounts()


def split(spool: Path, count: int, folder: Path) -> list[Shard]:
    """Cut `spool` (pulp_sync.sync.spool) into at most `count` shards of contiguous digest ranges and
    about equal weight, each written to `folder/shard-<i>.spool`; fewer when the digests do not spread
    over `count` ranges (a handful of files in one prefix)."""
    weights = [0] * 16**_PREFIX_HEX
    for planned in read_spool(spool):
        weights[_bucket(planned.sha256)] += planned.size + defaults.SHARD_FILE_WEIGHT
    owner = _owners(weights, count)
    shards = sorted(set(owner[bucket] for bucket, weight in enumerate(weights) if weight))
    renumber = {old: new for new, old in enumerate(shards)}
    paths = [folder / f"shard-{index}.spool" for index in range(len(shards))]
    files, sizes = [0] * len(shards), [0] * len(shards)
    with ExitStack() as stack:
        outputs = [stack.enter_context(path.open("w", encoding="utf-8")) for path in paths]
        with spool.open(encoding="utf-8") as lines:
            for line in lines:
                planned = parse_line(line)
                index = renumber[owner[_bucket(planned.sha256)]]
                outputs[index].write(line)
                files[index] += 1
                sizes[index] += planned.size
    return [Shard(index, paths[index], files[index], sizes[index]) for index in range(len(shards))]


def _bucket(digest: str) -> int:
    return int(digest[:_PREFIX_HEX], 16)


def _owners(weights: Sequence[int], count: int) -> list[int]:
    """The shard of each bucket: walking the buckets in digest order, a shard ends at the bucket boundary
    nearest to where its share of the total weight is reached (so a shard is never cut mid-bucket)."""
    total = sum(weights)
    owner, shard, reached = [], 0, 0
    for weight in weights:
        target = total * (shard + 1) / count
        if shard < count - 1 and weight and reached + weight / 2 > target:
            shard += 1
        owner.append(shard)
        reached += weight
    return owner


def shard_prefix(workspace_prefix: str, index: int) -> str:
    """The prefix of shard `index`'s workspace (ArtifactStore.workspace)."""
    return f"{workspace_prefix}-shard{index}"
