"""What goes into a downloader and what comes out of it: the data half of the plugin contract."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from downloaders.errors import DownloadError

__all__ = ["DownloadRequest", "DownloadResult", "DownloadFailure", "Outcome"]


@dataclass(frozen=True)
class DownloadRequest:
    """One file to fetch; sha256 and size, when given, are verified while the body streams.

    `max_size` bounds a body whose size is not known in advance (a manifest): a server that sends
    more fails the request rather than fill the disk.
    """

    url: str
    relative_path: str
    sha256: str | None = None
    size: int | None = None
    max_size: int | None = None


@dataclass(frozen=True)
class DownloadResult:
    """A complete, verified file in the caller's temp dir; the caller now owns (moves or removes) it.

    Its times follow one clock, whatever the engine (docs/plugins.md, "One clock"), so that two
    downloaders' latencies compare: from `started`, when the downloader took the request on, the
    download waits for a concurrency slot (`queue_seconds`), holds one for an attempt (`latency`),
    and between attempts backs off (neither); `finished` is when its file was verified. So
    `finished - started` is queue time, latency and backoff together. `DownloadJob` keeps this clock.
    `latency` and `queue_seconds` came after the rest of the contract: None from a downloader that
    does not measure them, which the sync then leaves out of its percentiles.
    """

    request: DownloadRequest
    path: Path
    sha256: str
    size: int
    started: float
    finished: float
    attempts: int
    latency: float | None = None
    """Seconds the download held a concurrency slot, from the moment each attempt held it (and the
    rate limit let it start) to that attempt's end, the last one's verified file: summed over attempts."""
    queue_seconds: float | None = None
    """Seconds the download waited for a slot (and for the rate limit), summed over its attempts."""

    @property
    def seconds(self) -> float:
        """Time from `started` to the verified end: queue time, latency and backoff together."""
        return self.finished - self.started


@dataclass(frozen=True)
class DownloadFailure:
    """A request that failed for good, after the retries its error allows; no file is left behind."""

    request: DownloadRequest
    error: DownloadError
    attempts: int


Outcome = DownloadResult | DownloadFailure
