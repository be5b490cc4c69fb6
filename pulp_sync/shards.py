"""One sync's downloads split across processes on this host ("shards"), into one store and one version.

    the parent: plan (the spool of what the store lacks) ─> split it into shards ─> one child per shard
    each child (python -m pulp_sync.shard): download, verify, adopt and record its artifacts
    the parent: sums their progress, stops them all at the first failure, then builds the one version

Why processes: a sync is one Python process, and on many small files its per-file work (a request, a
hash, a rename, a row) holds one core; the same files split over 4–8 processes by hand synced 3–4×
faster on a 16-core machine (issue 26). The parent keeps the repository's lock for the whole sync and
takes none of the children's work: they record artifacts, which need no lock, and only the parent
makes the version.

A shard is a contiguous range of digests (MariaDB's gap locks make interleaved inserts from several
processes deadlock-prone; ranges keep each shard's rows apart), cut so that the shards carry about
the same weight: bytes plus a fixed cost per file (`defaults.SHARD_FILE_WEIGHT`). Two passes over the
spool with a histogram of 65,536 digest prefixes keep the parent's memory flat however long the
manifest.

Children are started with `subprocess` (a fresh interpreter: no inherited database session, lock
descriptor or engine thread, which a fork would copy) and talk JSON lines over pipes: the job on
stdin, progress and the outcome on stdout. A child whose stdin closes, because the parent ended
however it ended, stops at once (`pulp_sync.shard`), so children never outlive their sync.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pulp_base.processes import AUTO, usable_cpus
from pulp_sync import defaults
from pulp_sync.store import artifact_store

__all__ = [
    "Shard",
    "ShardJob",
    "ShardCounts",
    "ShardFailed",
    "how_many",
    "split",
    "run_shards",
    "shard_prefix",
]

_PREFIX_HEX = 4
"""Digest prefixes (hex digits) the split's histogram counts by: 16^4 buckets, a flat 1 MB of counters."""


def how_many(setting: int, files: int, cpus: int | None = None) -> int:
    """How many processes a sync of `files` missing files uses: the setting (pulp_base.processes), never more
    than the files; with AUTO, one per usable CPU, but no process for fewer than
    `defaults.AUTO_FILES_PER_PROCESS` files: starting one costs a Python and Django start-up (0.3–0.8 s),
    which a handful of files does not repay, and big files gain little, as the engines already hash on
    other threads."""
    if files <= 1:
        return 1
    if setting != AUTO:
        return min(setting, files)
    cpus = usable_cpus() if cpus is None else cpus
    return max(1, min(cpus, files // defaults.AUTO_FILES_PER_PROCESS))


@dataclass(frozen=True)
class Shard:
    """One process's share of a sync: its spool (the same lines as the sync's) and what it holds."""

    index: int
    spool: Path
    files: int
    bytes: int


@dataclass(frozen=True)
class ShardJob:
    """What a child needs besides its shard: the remote (read from the database by its key, so no secret
    travels on a pipe or a command line), the manifest's URL (the files' base), and the prefix of its
    workspace (`shard_prefix`: under the sync's, so that removing a task's workspaces removes its shards')."""

    remote_id: int
    manifest_url: str
    workspace_prefix: str


@dataclass
class ShardCounts:
    """What a shard reports at its end, besides the files and bytes its progress counted: the sync's
    tally adds them up."""

    retries: int = 0
    failures: int = 0
    latencies: list[float] = field(default_factory=list)
    slot_waits: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


class ShardFailed(Exception):
    """A shard did not finish: it reported a failure, or its process ended without a word. The message
    names the shard, its process and why; `counts` is what it reported, if anything."""

    def __init__(self, shard: int, count: int, pid: int, reason: str, counts: ShardCounts | None) -> None:
        super().__init__(f"shard {shard + 1} of {count} (process {pid}) failed: {reason}")
        self.counts = counts or ShardCounts()


def split(spool: Path, count: int, folder: Path) -> list[Shard]:
    """Cut `spool` ("sha256,size,path" lines) into at most `count` shards of contiguous digest ranges and
    about equal weight, each written to `folder/shard-<i>.spool`; fewer when the digests do not spread
    over `count` ranges (a handful of files in one prefix)."""
    weights = [0] * 16**_PREFIX_HEX
    for digest, size in _digests_and_sizes(spool):
        weights[_bucket(digest)] += size + defaults.SHARD_FILE_WEIGHT
    owner = _owners(weights, count)
    shards = sorted(set(owner[bucket] for bucket, weight in enumerate(weights) if weight))
    renumber = {old: new for new, old in enumerate(shards)}
    paths = [folder / f"shard-{index}.spool" for index in range(len(shards))]
    files, sizes = [0] * len(shards), [0] * len(shards)
    with ExitStack() as stack:
        outputs = [stack.enter_context(path.open("w", encoding="utf-8")) for path in paths]
        with spool.open(encoding="utf-8") as lines:
            for line in lines:
                index = renumber[owner[_bucket(line)]]
                outputs[index].write(line)
                files[index] += 1
                sizes[index] += int(line.split(",", 2)[1])
    return [Shard(index, paths[index], files[index], sizes[index]) for index in range(len(shards))]


def _digests_and_sizes(spool: Path) -> Iterator[tuple[str, int]]:
    with spool.open(encoding="utf-8") as lines:
        for line in lines:
            digest, size, _ = line.split(",", 2)
            yield digest, int(size)


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


Progress = Callable[[int, int], None]
"""Called with the files and bytes done since the last call, and with (0, 0) at least every
`defaults.SHARD_POLL_SECONDS`: the sync's progress sink, which stops the sync by raising (a cancel)."""


def run_shards(shards: Sequence[Shard], jobs: Sequence[ShardJob], progress: Progress) -> list[ShardCounts]:
    """Run each shard in a child process, with its job, and wait for all of them; what each reported. At the
    first failure (a child that reports one, or ends without a word) every other child is stopped and
    ShardFailed raised; whatever `progress` raises (a cancel) stops every child too."""
    with _children(shards, jobs) as children:
        return _follow(children, progress)


@dataclass
class _Child:
    shard: Shard
    process: subprocess.Popen[bytes]
    counts: ShardCounts | None = None
    failure: str | None = None
    buffer: bytes = b""


@contextmanager
def _children(shards: Sequence[Shard], jobs: Sequence[ShardJob]) -> Iterator[list[_Child]]:
    """Start one child per shard, each given its job; on leaving, stop any that still runs (SIGTERM,
    then SIGKILL) and remove what a stopped or killed one left in its workspace."""
    children: list[_Child] = []
    try:
        for shard, job in zip(shards, jobs, strict=True):
            children.append(_Child(shard, _start(shard, job)))
        yield children
    finally:
        store = artifact_store()
        for child, job in zip(children, jobs, strict=False):
            _stop(child.process)
            store.remove_workspaces(job.workspace_prefix)


def _start(shard: Shard, job: ShardJob) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, "-m", "pulp_sync.shard"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    message = {**asdict(job), "spool": str(shard.spool), "files": shard.files, "bytes": shard.bytes}
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()  # stdin stays open: its end tells the child the parent is gone
    return process


def _follow(children: list[_Child], progress: Progress) -> list[ShardCounts]:
    """Read every child's lines until each has ended; the first failure ends the wait."""
    with selectors.DefaultSelector() as selector:
        for child in children:
            assert child.process.stdout is not None
            os.set_blocking(child.process.stdout.fileno(), False)
            selector.register(child.process.stdout, selectors.EVENT_READ, child)
        while selector.get_map():  # one entry per child that still runs
            progress(0, 0)
            for key, _ in selector.select(defaults.SHARD_POLL_SECONDS):
                child = key.data
                if not _read(child, progress):
                    selector.unregister(key.fileobj)
                    _ended(child, len(children))
    return [child.counts for child in children if child.counts is not None]


def _read(child: _Child, progress: Progress) -> bool:
    """Take what the child wrote (JSON, so ASCII: a read cannot split a character); False once its stdout
    is closed (it ended)."""
    assert child.process.stdout is not None
    try:
        data = os.read(child.process.stdout.fileno(), 1 << 16)
    except BlockingIOError:
        return True
    if not data:
        return False
    child.buffer += data
    *lines, child.buffer = child.buffer.split(b"\n")
    for line in lines:
        _event(child, json.loads(line), progress)
    return True


def _event(child: _Child, event: dict[str, Any], progress: Progress) -> None:
    if "progress" in event:
        progress(*event["progress"])
    elif "done" in event:
        child.counts = ShardCounts(**event["done"])
    elif "failed" in event:
        child.counts = ShardCounts(**event["failed"]["counts"])
        child.failure = event["failed"]["message"]


def _ended(child: _Child, count: int) -> None:
    """The child closed its stdout: wait for it, and raise ShardFailed unless it finished its shard."""
    code = child.process.wait()
    if child.failure is None and child.counts is not None and code == 0:
        return
    shard = child.shard
    why = child.failure or _how_it_ended(code)
    raise ShardFailed(shard.index, count, child.process.pid, why, child.counts)


def _how_it_ended(code: int) -> str:
    if code < 0:
        return f"its process was killed by {signal.Signals(-code).name} before it finished"
    return f"its process exited with status {code} before it finished"


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End a child that still runs: SIGTERM, then SIGKILL after `defaults.SHARD_STOP_SECONDS`."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(defaults.SHARD_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


def shard_prefix(workspace_prefix: str, index: int) -> str:
    """The prefix of shard `index`'s workspace (ArtifactStore.workspace)."""
    return f"{workspace_prefix}-shard{index}"
