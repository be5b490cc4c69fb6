"""The plugin contract (`Downloader`) and `BaseDownloader`, which runs any engine behind it.

An engine runs in a thread of its own and hands finished outcomes to the caller through a bounded
queue. The caller's loop is therefore the same for every engine: it iterates `fetch(...)`, and the
engine keeps downloading while the caller stores what arrived, never more than the queue's bound
ahead of it.
"""

from __future__ import annotations

import abc
import asyncio
import queue
import threading
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from downloaders import defaults
from downloaders.concurrency import ConcurrencyLimit, limit_for
from downloaders.errors import UnsupportedURL
from downloaders.settings import DownloaderSettings, check_http_url
from downloaders.types import DownloadRequest, DownloadResult, Outcome

__all__ = ["Downloader", "BaseDownloader", "Handoff", "FetchCancelled", "check_url", "adapts"]


def check_url(url: str) -> None:
    """Refuse anything but an http(s) URL with a host, before any connection is made (a redirect's
    Location is the server's text: `http://[oops/` must be a refusal, not an engine's crash)."""
    try:
        check_http_url(url)
    except ValueError as error:
        raise UnsupportedURL(url, str(error)) from error


@runtime_checkable
class Downloader(Protocol):
    """What the sync pipeline needs from a downloader; register the class under `pulp_sync.downloaders`."""

    name: ClassVar[str]

    def __init__(self, settings: DownloaderSettings) -> None: ...

    def fetch(self, requests: Iterable[DownloadRequest], temp_dir: Path) -> Generator[Outcome, None, None]:
        """Yield one outcome per request, in completion order, with at most `download_concurrency`
        in flight. Closing the iterator early cancels the rest and leaves no file behind. A result's
        `latency` is the time it held a slot and `queue_seconds` its wait for one (DownloadResult):
        one clock for every downloader, so that their latencies compare."""
        ...


def adapts(downloader: type[Downloader]) -> bool:
    """Whether a downloader class says it follows a changing limit (`adapts_concurrency = True`, docs/plugins.md):
    the one reading of it, since a plugin that does not subclass BaseDownloader may not have the attribute."""
    return bool(getattr(downloader, "adapts_concurrency", False))


class FetchCancelled(Exception):
    """Raised inside an engine when the consumer closed the iterator; the engine should unwind."""


class Handoff:
    """The bounded queue between an engine's thread and the consumer, plus cancellation."""

    _DONE = object()

    def __init__(self, maxsize: int) -> None:
        self._queue: queue.Queue[object] = queue.Queue(maxsize)
        self.cancelled = threading.Event()
        self._on_cancel: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def emit(self, outcome: Outcome) -> None:
        """Hand an outcome over, waiting while the queue is full; raises FetchCancelled once cancelled."""
        while not self.cancelled.is_set():
            try:
                self._queue.put(outcome, timeout=0.05)
                return
            except queue.Full:
                continue
        _discard(outcome)
        raise FetchCancelled()

    def try_emit(self, outcome: Outcome) -> bool:
        """Hand over without waiting; False when the queue is full (the caller waits elsewhere)."""
        try:
            self._queue.put_nowait(outcome)
            return True
        except queue.Full:
            return False

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Run `callback` (from the consumer's thread) when the consumer stops early."""
        with self._lock:
            self._on_cancel.append(callback)
            if not self.cancelled.is_set():
                return
        callback()

    def cancel_on_close(self, task: asyncio.Task[None]) -> None:
        """For an engine on an event loop: cancel its main `task` when the consumer stops early."""
        loop = task.get_loop()
        self.on_cancel(lambda: _cancel_soon(loop, task))

    def cancel(self) -> None:
        with self._lock:
            self.cancelled.set()
            callbacks = list(self._on_cancel)
        for callback in callbacks:
            callback()

    def finish(self, error: BaseException | None = None) -> None:
        """Signal the end of the stream (with the engine's crash, if it crashed)."""
        marker = error if error is not None else self._DONE
        while not self.cancelled.is_set():
            try:
                self._queue.put(marker, timeout=0.05)
                return
            except queue.Full:
                continue

    def get(self) -> Outcome | None:
        """The next outcome, or None at the end; re-raises an engine crash in the consumer."""
        item = self._queue.get()
        if item is self._DONE:
            return None
        if isinstance(item, BaseException):
            raise item
        return item  # type: ignore[return-value]

    def drain(self) -> None:
        """Remove the temp files of outcomes nobody will consume."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, DownloadResult):
                _discard(item)


def _cancel_soon(loop: asyncio.AbstractEventLoop, task: asyncio.Task[None]) -> None:
    try:
        loop.call_soon_threadsafe(task.cancel)
    except RuntimeError:
        pass  # the loop already ended: nothing left to cancel


def _discard(outcome: object) -> None:
    if isinstance(outcome, DownloadResult):
        outcome.path.unlink(missing_ok=True)


class BaseDownloader(abc.ABC):
    """Runs `_run` in a background thread and turns the hand-off queue into `fetch`'s iterator.

    Each fetch has its `concurrency` (downloaders.concurrency.limit_for): the downloads `_run` may have in
    flight now, fixed or found while it runs, and the record of them; a subclass that follows it, as the
    built-in engines do, says so with `adapts_concurrency = True` (docs/plugins.md).
    """

    name: ClassVar[str]
    adapts_concurrency: ClassVar[bool] = False
    """Whether `_run` follows `self.concurrency.limit` as it changes (`auto_concurrency`); one that does not
    is given a fixed `download_concurrency` by the sync."""

    def __init__(self, settings: DownloaderSettings) -> None:
        self.settings = settings
        self.concurrency: ConcurrencyLimit = limit_for(settings)
        """The latest fetch's limit and its record (the sync reports its trajectory)."""

    def fetch(self, requests: Iterable[DownloadRequest], temp_dir: Path) -> Generator[Outcome, None, None]:
        self.concurrency = limit_for(self.settings)
        handoff = Handoff(maxsize=self.concurrency.bound * defaults.QUEUE_SIZE_FACTOR)
        worker = threading.Thread(
            target=self._run_to_end,
            args=(requests, Path(temp_dir), handoff),
            name=f"{self.name}-downloader",
            daemon=True,
        )
        worker.start()
        try:
            while (outcome := handoff.get()) is not None:
                yield outcome
        finally:
            handoff.cancel()
            worker.join()
            handoff.drain()

    def _run_to_end(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        try:
            self._run(requests, temp_dir, handoff)
        except FetchCancelled:
            return
        except BaseException as crash:  # noqa: BLE001 - carried to the consumer's thread and re-raised there
            handoff.finish(crash)
            return
        handoff.finish()

    @abc.abstractmethod
    def _run(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        """Download every request, emitting each outcome through `handoff` as it completes.

        Must keep at most `self.concurrency.limit` requests in flight (read again as they end: it changes
        with `adapts_concurrency`), wrap each attempt in `self.concurrency.attempt()` and give each body's
        chunks to `self.concurrency.transferred`, make what a download needs (a connection, a handle, a
        worker) only as downloads start (3 files need 3, whatever the concurrency), release that slot
        while backing off, and return promptly (raising FetchCancelled is fine) once `handoff.cancelled`:
        a thread blocked in a socket until its timeout holds up the consumer, who waits for `_run`
        (`handoff.on_cancel` can cut it off).
        A `DownloadJob` per request keeps the clock: `holding()` around each attempt, entered once it
        holds its slot and the rate limit let it start, and `back_off(delay)` for each retry.
        """
