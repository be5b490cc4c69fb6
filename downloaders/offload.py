"""sha256 in hashing lanes of their own, so an event loop's thread reads and writes while the hash runs.

hashlib releases the GIL, so on other cores hashing overlaps with the loop's reads and writes. A
lane is one thread with its own bounded queue; each large body is pinned to one lane for its whole
life, so its chunks are hashed in order (sha256 is sequential), and goes to the lane with the fewest
bodies in flight (then the fewest chunks queued), so big bodies downloaded at once hash on several
cores. One lane per usable CPU but the loop's (`hashing_lanes`): on a 2-core machine that is one
lane, the single hashing thread this module had before. The loop waits only when its body's lane is
full (hashing is the bottleneck) and once per body for its digest. The backlog is shared out among
the lanes, so the memory it holds stays bounded in total. Small bodies are not worth the hop (a
thread wake-up costs more than hashing a few kB) and are hashed on the loop.
docs/performance.md has the measurements.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from downloaders import defaults
from downloaders.streaming import BodyWriter
from downloaders.types import DownloadRequest
from pulp_base.download_processes import usable_cpus

__all__ = [
    "HashingLanes",
    "HashingThread",
    "AsyncBody",
    "hashing_lanes",
    "OFFLOAD_MIN_BYTES",
    "BACKLOG_CHUNKS",
]

OFFLOAD_MIN_BYTES = 256 * 1024
"""Bodies expected to be smaller than this are hashed on the loop."""
BACKLOG_CHUNKS = 64
"""Chunks waiting to be hashed, all lanes together, before the loop waits (64 × a 256 kB chunk:
16 MB at most); each lane queues its share."""

_Item = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any] | None"]


def hashing_lanes(concurrency: int) -> int:
    """How many lanes hash for an engine with `concurrency` downloads in flight: one per usable CPU
    but the loop's, at least one, at most MAX_HASHING_LANES, and never more than the concurrency
    (each lane hashes one body at a time)."""
    spare = usable_cpus() - defaults.HASHING_SPARE_CPUS
    return max(1, min(spare, defaults.MAX_HASHING_LANES, concurrency))


class HashingThread:
    """One lane: a thread that runs the hashing steps queued to it, in the order queued.

    Made and closed on the loop's thread, which alone counts the bodies pinned to it; `close`
    lets the queued steps run, then ends the thread.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, backlog: int = BACKLOG_CHUNKS, name: str = "hashing") -> None:
        self._loop = loop
        self.backlog = backlog
        self._queue: queue.Queue[_Item | None] = queue.Queue(backlog)  # None ends the thread
        self.bodies = 0  # pinned to this lane and not yet left: AsyncBody counts itself in and out
        self._thread = threading.Thread(target=self._drain, name=name, daemon=True)
        self._thread.start()

    @property
    def load(self) -> tuple[int, int]:
        """Bodies in flight, then chunks queued: the lower, the better the lane for a new body."""
        return self.bodies, self._queue.qsize()

    async def run(self, step: Callable[..., Any], *arguments: Any) -> None:
        """Queue `step(*arguments)` without waiting for it (only for room in the queue)."""
        await self._put((step, arguments, None))

    async def result(self, step: Callable[[], Any]) -> Any:
        """Queue `step()` after everything queued so far and wait for what it returns (or raises)."""
        future = self._loop.create_future()
        await self._put((step, (), future))
        return await future

    def stop(self) -> None:
        """Queue the end of the thread after every step queued so far."""
        self._queue.put(None)

    def join(self) -> None:
        """Wait for the thread to end (after `stop`)."""
        self._thread.join()

    def close(self) -> None:
        """Run what is queued, then end the thread."""
        self.stop()
        self.join()

    async def _put(self, item: _Item) -> None:
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            await asyncio.to_thread(self._queue.put, item)

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            step, arguments, future = item
            try:
                outcome, error = step(*arguments), None
            except Exception as failure:  # noqa: BLE001 - handed to the coroutine waiting for it
                outcome, error = None, failure
            if future is not None:
                self._loop.call_soon_threadsafe(_settle, future, outcome, error)


def _settle(future: asyncio.Future[Any], outcome: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(outcome)


class HashingLanes:
    """The hashing lanes of one event loop; each large body goes to the least loaded lane and stays there.

    Made and closed on the loop's thread; `close` lets every lane run what is queued, then ends them.
    Each lane queues `backlog // lanes` chunks (at least one), so all together hold `backlog` at most
    whenever there are no more lanes than chunks of backlog (MAX_HASHING_LANES ≤ BACKLOG_CHUNKS).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, lanes: int = 1, backlog: int = BACKLOG_CHUNKS) -> None:
        if lanes < 1:
            raise ValueError(f"lanes must be at least 1, not {lanes}")
        share = max(1, backlog // lanes)
        self.lanes = tuple(HashingThread(loop, share, _lane_name(index, lanes)) for index in range(lanes))

    def body(self, request: DownloadRequest, temp_dir: Path) -> AsyncBody:
        """A fresh temp file for `request`'s body, hashed in a lane unless the body is known to be small."""
        writer = BodyWriter(request, temp_dir)
        small = request.size is not None and request.size < OFFLOAD_MIN_BYTES
        return AsyncBody(writer, None if small else self._least_loaded())

    def close(self) -> None:
        """Run what every lane has queued, then end every lane's thread."""
        for lane in self.lanes:
            lane.stop()
        for lane in self.lanes:
            lane.join()

    def _least_loaded(self) -> HashingThread:
        return min(self.lanes, key=lambda lane: lane.load)


def _lane_name(index: int, lanes: int) -> str:
    """A lane thread's name: "hashing" when it is the only one, as before lanes existed."""
    return "hashing" if lanes == 1 else f"hashing-{index}"


class AsyncBody:
    """A BodyWriter for a coroutine: the same checks and writes, with its hashing in its lane when it
    has one. Use it as a context manager: it counts itself into its lane when made and out when the
    block is left. Leaving the block without `finish` discards the file."""

    def __init__(self, writer: BodyWriter, lane: HashingThread | None) -> None:
        self._writer = writer
        self._lane = lane
        self._failure: Exception | None = None
        if lane is not None:
            lane.bodies += 1

    @property
    def path(self) -> Path:
        return self._writer.path

    @property
    def size(self) -> int:
        return self._writer.size

    async def write(self, chunk: bytes) -> None:
        """Check the chunk (a body too long fails at once), have it hashed, and write it."""
        if self._lane is None:
            self._writer.write(chunk)
            return
        self._writer.check(chunk)
        await self._lane.run(self._add_to_digest, chunk)
        self._writer.store(chunk)

    async def finish(self) -> str:
        """Close the file, wait for the digest of every chunk, and verify size and digest."""
        if self._lane is None:
            return self._writer.finish()
        self._writer.close()
        return self._writer.verify(await self._lane.result(self._hexdigest))

    def _add_to_digest(self, chunk: bytes) -> None:
        """In the lane: hash a chunk, or keep the first failure for `finish` (nothing waits for this step)."""
        if self._failure is not None:
            return
        try:
            self._writer.add_to_digest(chunk)
        except Exception as failure:  # noqa: BLE001 - raised to the coroutine at `finish`
            self._failure = failure

    def _hexdigest(self) -> str:
        """In the lane, after every chunk: the digest, or the failure of a chunk's hashing."""
        if self._failure is not None:
            raise self._failure
        return self._writer.hexdigest()

    def __enter__(self) -> AsyncBody:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._lane is not None:
            self._lane.bodies -= 1
            self._lane = None
        self._writer.discard()
