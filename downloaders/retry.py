"""When to try a request again, how long to wait first, and a download's clock; shared by every engine so they agree."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

from downloaders import defaults
from downloaders.errors import DownloadError, HttpStatusError, VerificationError
from downloaders.settings import DownloaderSettings
from downloaders.types import DownloadFailure, DownloadRequest, DownloadResult

__all__ = ["DownloadJob", "RetryPolicy", "RateLimiter", "parse_retry_after"]


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After header asks for: delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)


class RetryPolicy:
    """Decides retries: transient errors up to max_retries, a mismatch once, never another 4xx.

    The delay is exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff
    And Jitter", 2015): uniform in [0, min(max, base * 2**retry)], so many clients that failed
    together do not retry together. A Retry-After from the server wins when it is longer.
    """

    def __init__(self, settings: DownloaderSettings, rng: random.Random | None = None) -> None:
        self._max_retries = settings.max_retries
        self._base = settings.backoff_base
        self._cap = settings.backoff_max
        self._rng = rng or random.Random()

    def should_retry(self, error: DownloadError, attempts: int, mismatches: int) -> bool:
        """True when a request that failed with `error` after `attempts` tries gets another one."""
        if not error.retryable or attempts > self._max_retries:
            return False
        if isinstance(error, VerificationError):
            return mismatches <= defaults.MISMATCH_RETRIES
        return True

    def delay(self, error: DownloadError, attempts: int) -> float:
        """Seconds to wait before attempt number `attempts + 1`."""
        jitter = self._rng.uniform(0.0, min(self._cap, self._base * 2 ** (attempts - 1)))
        if isinstance(error, HttpStatusError) and error.retry_after is not None:
            return max(jitter, min(self._cap, error.retry_after))
        return jitter


@dataclass
class DownloadJob:
    """One request and the attempts made for it so far: what RetryPolicy needs, and what the outcome reports.

    It is also the download's clock, the one place the contract's times are measured (DownloadResult
    says what they mean), so that every engine measures the same thing: the engine calls `holding()`
    around each attempt, or `hold()` and `release()` where an attempt begins and ends in different
    places, and `back_off(delay)` when it schedules a retry. Whatever the download does outside those
    (waiting for a slot, for the rate limit, for the engine to look at it again) is queue time.
    """

    request: DownloadRequest
    started: float = field(default_factory=time.monotonic)
    attempts: int = 0
    mismatches: int = 0
    latency: float = 0.0
    """Seconds the attempts so far held their slot."""
    queue_seconds: float = 0.0
    """Seconds the attempts so far waited for one."""
    _since: float = field(init=False, repr=False)
    """When the current wait (or, between `hold` and `release`, the current attempt) began."""

    def __post_init__(self) -> None:
        self._since = self.started

    def hold(self) -> None:
        """The next attempt holds its concurrency slot and may start now (the rate limit let it)."""
        now = time.monotonic()
        self.queue_seconds += max(0.0, now - self._since)  # a timer may wake a backoff a hair early
        self._since = now

    def release(self) -> None:
        """The attempt that `hold` began has ended: its file verified, or with an error."""
        now = time.monotonic()
        self.latency += now - self._since
        self._since = now

    @contextmanager
    def holding(self) -> Iterator[None]:
        """`hold` before the attempt in the block and `release` after it, however it ends."""
        self.hold()
        try:
            yield
        finally:
            self.release()

    def back_off(self, seconds: float) -> float:
        """The next attempt is due in `seconds`, a backoff (neither queue time nor latency); returns
        `seconds` for the sleep or the timer that waits them."""
        self._since = time.monotonic() + seconds
        return seconds

    def result(self, path: Path, sha256: str, size: int) -> DownloadResult:
        """The outcome of an attempt that produced this verified file."""
        return DownloadResult(
            self.request,
            path,
            sha256,
            size,
            self.started,
            time.monotonic(),
            self.attempts,
            latency=self.latency,
            queue_seconds=self.queue_seconds,
        )

    def failure(self, error: DownloadError) -> DownloadFailure:
        """The outcome once RetryPolicy gives up after `error`."""
        return DownloadFailure(self.request, error, self.attempts)


class RateLimiter:
    """At most `rate` request starts per second across all threads (pulpcore's Remote.rate_limit)."""

    def __init__(self, rate: float | None) -> None:
        self._interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Claim the next start slot; returns how many seconds to wait before starting."""
        if not self._interval:
            return 0.0
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self._interval
            return start - now
