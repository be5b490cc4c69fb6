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
    """A complete, verified file in the caller's temp dir; the caller now owns (moves or removes) it."""

    request: DownloadRequest
    path: Path
    sha256: str
    size: int
    started: float
    finished: float
    attempts: int

    @property
    def seconds(self) -> float:
        """Time from the first attempt's start to the verified end, backoff included."""
        return self.finished - self.started


@dataclass(frozen=True)
class DownloadFailure:
    """A request that failed for good, after the retries its error allows; no file is left behind."""

    request: DownloadRequest
    error: DownloadError
    attempts: int


Outcome = DownloadResult | DownloadFailure
