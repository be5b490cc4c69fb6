"""sha256 in a thread of its own, so an event loop's thread reads and writes while the hash runs.

hashlib releases the GIL, so on a second core hashing overlaps with the loop's reads and writes.
A body's chunks go, in order, through one bounded queue to one thread; the loop waits only when
that queue is full (hashing is the bottleneck) and once per body for its digest. Small bodies are
not worth the hop (a thread wake-up costs more than hashing a few kB) and are hashed on the loop.
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

from downloaders.streaming import BodyWriter
from downloaders.types import DownloadRequest

__all__ = ["HashingThread", "AsyncBody", "OFFLOAD_MIN_BYTES", "BACKLOG_CHUNKS"]

OFFLOAD_MIN_BYTES = 256 * 1024
"""Bodies expected to be smaller than this are hashed on the loop."""
BACKLOG_CHUNKS = 64
"""Chunks waiting to be hashed before the loop waits (64 × a 256 kB chunk: 16 MB at most)."""

_Item = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any] | None"]


class HashingThread:
    """One thread that runs the hashing steps of an event loop's bodies, in the order queued.

    Made and closed on the loop's thread; `close` lets the queued steps run, then ends the thread.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, backlog: int = BACKLOG_CHUNKS) -> None:
        self._loop = loop
        self._queue: queue.Queue[_Item | None] = queue.Queue(backlog)  # None ends the thread
        self._thread = threading.Thread(target=self._drain, name="hashing", daemon=True)
        self._thread.start()

    def body(self, request: DownloadRequest, temp_dir: Path) -> AsyncBody:
        """A fresh temp file for `request`'s body, hashed here unless the body is known to be small."""
        small = request.size is not None and request.size < OFFLOAD_MIN_BYTES
        return AsyncBody(BodyWriter(request, temp_dir), None if small else self)

    async def run(self, step: Callable[..., Any], *arguments: Any) -> None:
        """Queue `step(*arguments)` without waiting for it (only for room in the queue)."""
        await self._put((step, arguments, None))

    async def result(self, step: Callable[[], Any]) -> Any:
        """Queue `step()` after everything queued so far and wait for what it returns (or raises)."""
        future = self._loop.create_future()
        await self._put((step, (), future))
        return await future

    def close(self) -> None:
        """Run what is queued, then end the thread."""
        self._queue.put(None)
        self._thread.join()

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


class AsyncBody:
    """A BodyWriter for a coroutine: the same checks and writes, with its hashing in the hashing
    thread when it has one. Leaving the block without `finish` discards the file."""

    def __init__(self, writer: BodyWriter, hashing: HashingThread | None) -> None:
        self._writer = writer
        self._hashing = hashing

    @property
    def path(self) -> Path:
        return self._writer.path

    @property
    def size(self) -> int:
        return self._writer.size

    async def write(self, chunk: bytes) -> None:
        """Check the chunk (a body too long fails at once), have it hashed, and write it."""
        if self._hashing is None:
            self._writer.write(chunk)
            return
        self._writer.check(chunk)
        await self._hashing.run(self._writer.add_to_digest, chunk)
        self._writer.store(chunk)

    async def finish(self) -> str:
        """Close the file, wait for the digest of every chunk, and verify size and digest."""
        if self._hashing is None:
            return self._writer.finish()
        self._writer.close()
        return self._writer.verify(await self._hashing.result(self._writer.hexdigest))

    def __enter__(self) -> AsyncBody:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._writer.discard()
