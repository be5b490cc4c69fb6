"""The shards of a split sync (pulp_sync.sync.split.planning) run in processes forked from the sync's own.

Why fork: a fresh interpreter pays Python's, Django's and aiohttp's start-up (0.6 s on a 2-core
machine, a quarter of a 10,000-file sync there); a fork starts at once with everything loaded.
pulp_sync.sync.children forks them and puts aside what a fork copies that a child must not use: the
parent's database connections (the parent keeps its own, and with it the repository's lock), the other
children's pipes, and threads (the sync forks before its progress bar or any engine thread starts).

Parent and child talk JSON lines over two pipes: the child writes {"progress": [files, bytes]} a few
times a second, then {"done": counts} or {"failed": {"message": ..., "counts": ...}}. The child reads
nothing; the end of its input pipe says the parent has gone (it died, or gave up on the sync), and
the child ends there, so children never outlive their sync (children.fork_child). SIGTERM, which the parent
sends when another shard failed or the sync was stopped, ends a child as it would end an unsplit sync: what it
verified is adopted and recorded on the way out, so the next sync need not fetch it again. Ctrl-C on
a terminal reaches the whole process group; a child ignores it and ends when the parent does.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import IO, Any

from pulp_sync import defaults
from pulp_sync.content.store import artifact_store
from pulp_sync.messages import one_line
from pulp_sync.progress import ProgressSink, Throttle
from pulp_sync.sync.children import fork_child, terminate
from pulp_sync.sync.split.planning import Shard, ShardCounts, ShardFailed, ShardStopped, shard_prefix

__all__ = ["Work", "Progress", "Runner", "run_shards", "remove_workspaces", "BatchedProgress", "PipeProgress"]

Work = Callable[[Shard, str, ProgressSink], ShardCounts]
"""A shard's downloads, in its process: the shard, the prefix of its workspace, where its progress goes;
what it did, or ShardStopped."""

Progress = Callable[[int | None, int, int], None]
"""Called with a shard's index and the files and bytes it did since its last call, and with (None, 0, 0)
at least every `defaults.SHARD_POLL_SECONDS`: the sync's progress, which stops the sync by raising (a
cancel)."""

Runner = Callable[[Sequence[Shard], str, Work, Callable[[], None], Progress], list[ShardCounts]]
"""How a split sync's shards are run: `run_shards` (processes on this host), or on RQ workers
(pulp_sync.sync.split.board.on_workers)."""

def run_shards(shards: Sequence[Shard], prefix: str, work: Work, started: Callable[[], None],
               progress: Progress) -> list[ShardCounts]:
    """Run `work` on each shard in a process of its own, its workspace named from `prefix`, and wait for all
    of them; what each reported. `started` is called once every child runs (a progress bar's thread must
    not exist when a process forks). At the first failure (a child that reports one, or ends without a
    word) every other child is stopped and ShardFailed raised; whatever `progress` raises stops them too."""
    with _children(shards, prefix, work) as children:
        started()
        return _follow(children, progress)


@dataclass
class _Child:
    shard: Shard
    pid: int
    output: int
    """The read end of the child's output pipe."""
    input: int
    """The write end of the child's input pipe: closing it tells the child to end."""
    counts: ShardCounts | None = None
    failure: str | None = None
    status: int | None = None
    """The exit code (negative: the signal that ended it) once it was waited for."""
    buffer: bytes = b""


@contextmanager
def _children(shards: Sequence[Shard], prefix: str, work: Work) -> Iterator[list[_Child]]:
    """Fork one child per shard; on leaving, stop any that still runs (SIGTERM, then SIGKILL) and remove
    what a stopped or killed one left in its workspace."""
    children: list[_Child] = []
    try:
        for shard in shards:
            children.append(_fork(shard, shard_prefix(prefix, shard.index), work, children))
        yield children
    finally:
        for child in children:
            _stop(child)
        remove_workspaces(prefix, shards)


def remove_workspaces(prefix: str, shards: Sequence[Shard]) -> None:
    """Remove what the shards' processes left in their workspaces (named from the sync's `prefix`): a process
    that ends cleanly removes its own, one stopped or killed cannot."""
    store = artifact_store()
    for shard in shards:
        store.remove_workspaces(shard_prefix(prefix, shard.index))


def _fork(shard: Shard, workspace_prefix: str, work: Work, siblings: Sequence[_Child]) -> _Child:
    from_child, to_parent = os.pipe()
    inherited = (from_child, *(fd for s in siblings for fd in (s.input, s.output)))
    pid, to_child = fork_child(partial(_shard_main, shard, workspace_prefix, work, to_parent),
                               defaults.SHARD_STOP_SECONDS, inherited)
    os.close(to_parent)
    os.set_blocking(from_child, False)
    return _Child(shard, pid, output=from_child, input=to_child)


def _follow(children: list[_Child], progress: Progress) -> list[ShardCounts]:
    """Read every child's lines until each has ended; the first failure ends the wait."""
    with selectors.DefaultSelector() as selector:
        for child in children:
            selector.register(child.output, selectors.EVENT_READ, child)
        while selector.get_map():  # one entry per child that still runs
            progress(None, 0, 0)
            for key, _ in selector.select(defaults.SHARD_POLL_SECONDS):
                child = key.data
                if not _read(child, progress):
                    selector.unregister(key.fileobj)
                    _ended(child, len(children))
    return [child.counts for child in children if child.counts is not None]


def _read(child: _Child, progress: Progress) -> bool:
    """Take what the child wrote (JSON, so ASCII: a read cannot split a character); False once its output
    is closed (it ended)."""
    try:
        data = os.read(child.output, 1 << 16)
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
        progress(child.shard.index, *event["progress"])
    elif "done" in event:
        child.counts = ShardCounts(**event["done"])
    elif "failed" in event:
        child.counts = ShardCounts(**event["failed"]["counts"])
        child.failure = event["failed"]["message"]


def _ended(child: _Child, count: int) -> None:
    """The child closed its output: wait for it, and raise ShardFailed unless it finished its shard."""
    _, status = os.waitpid(child.pid, 0)
    child.status = os.waitstatus_to_exitcode(status)
    if child.failure is None and child.counts is not None and child.status == 0:
        return
    raise ShardFailed(child.shard.index, count, child.pid, child.failure or _how_it_ended(child.status),
                      child.counts)


def _how_it_ended(code: int) -> str:
    if code < 0:
        return f"its process was killed by {signal.Signals(-code).name} before it finished"
    return f"its process exited with status {code} before it finished"


def _stop(child: _Child) -> None:
    """End a child that still runs (`terminate`), and close its pipes."""
    if child.status is None:
        terminate(child.pid, defaults.SHARD_STOP_SECONDS)
    for descriptor in (child.input, child.output):
        os.close(descriptor)


class BatchedProgress(ABC):
    """A shard's ProgressSink: the files and bytes done since the last report, reported at most every
    `defaults.SHARD_PROGRESS_SECONDS` (and at the end) by `report`, so the parent's progress stays current
    without a message per file."""

    def __init__(self) -> None:
        self._files = 0
        self._bytes = 0
        self._throttle = Throttle(defaults.SHARD_PROGRESS_SECONDS)

    def start(self, total_artifacts: int, total_bytes: int) -> None:
        self._throttle.restart()

    def advance(self, artifacts: int, bytes: int) -> None:
        self._files += artifacts
        self._bytes += bytes
        if self._throttle.due():
            self.finish()

    def finish(self) -> None:
        self.report(self._files, self._bytes)
        self._files = self._bytes = 0
        self._throttle.restart()

    @abstractmethod
    def report(self, files: int, size: int) -> None:
        """Tell the parent; each kind of shard has its own way."""


class PipeProgress(BatchedProgress):
    """A forked shard's progress: a JSON line on its pipe to the parent, when there is news."""

    def __init__(self, out: IO[str]) -> None:
        super().__init__()
        self._out = out

    def report(self, files: int, size: int) -> None:
        if files or size:
            _send(self._out, {"progress": [files, size]})


def _shard_main(shard: Shard, workspace_prefix: str, work: Work, to_parent: int) -> int:
    """A shard's child: run the work, report on the pipe; the exit code."""
    with os.fdopen(to_parent, "w", encoding="ascii") as out:
        return _report(out, shard, workspace_prefix, work)


def _report(out: IO[str], shard: Shard, workspace_prefix: str, work: Work) -> int:
    """Run the work and tell the parent how it ended; the child's exit code."""
    try:
        counts = work(shard, workspace_prefix, PipeProgress(out))
    except ShardStopped as stopped:
        _send(out, {"failed": {"message": str(stopped), "counts": stopped.counts.as_dict()}})
        return 1
    except Exception as error:  # noqa: BLE001 - told to the parent, which fails the sync with it
        _send(out, {"failed": {"message": f"{type(error).__name__}: {one_line(error)}", "counts": {}}})
        return 1
    _send(out, {"done": counts.as_dict()})
    return 0


def _send(out: IO[str], message: dict[str, Any]) -> None:
    """One JSON line to the parent (ASCII only, so the parent's reads never split a character)."""
    out.write(json.dumps(message, ensure_ascii=True) + "\n")
    out.flush()
