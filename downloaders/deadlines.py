"""How long one download attempt may take, and the error when it took longer: one place for every engine.

Issue 17: with no `total_timeout` (the default), a server that sent a byte now and then, never
waiting long enough for `sock_read_timeout` to fire, held a download, and its concurrency slot, for
as long as it liked. An attempt now always has a deadline when its size is bounded: `total_timeout`
when set, else `deadline_allowance` for connecting and headers plus the time the body takes at
`min_rate` bytes per second. The engines and the example plugins call `deadline_seconds` for the
bound and raise `deadline_timeout` when it passes, so every downloader bounds alike and says alike why.
"""

from __future__ import annotations

from downloaders.errors import DownloadTimeout
from downloaders.settings import DownloaderSettings
from downloaders.types import DownloadRequest

__all__ = ["deadline_seconds", "deadline_timeout"]


def deadline_seconds(request: DownloadRequest, settings: DownloaderSettings) -> float | None:
    """Seconds one attempt of `request` may take, connecting, redirects, headers and body together;
    None for no limit.

    `total_timeout` when set; else `deadline_allowance + bytes / min_rate`, where bytes is the
    request's size or, for a body of unknown size, its `max_size` (a body cannot lawfully be longer);
    None when `min_rate` is None or neither is known.
    """
    if settings.total_timeout is not None:
        return settings.total_timeout
    expected = _expected_bytes(request)
    if settings.min_rate is None or expected is None:
        return None
    return settings.deadline_allowance + expected / settings.min_rate


def deadline_timeout(request: DownloadRequest, settings: DownloaderSettings) -> DownloadTimeout:
    """The error for an attempt of `request` that outlived `deadline_seconds`: one line saying which
    deadline it was, and, for the derived one, how it was derived and which settings change it."""
    if settings.total_timeout is not None:
        total = _number(settings.total_timeout)
        return DownloadTimeout(request.url, f"took longer than the total_timeout of {total} s")
    seconds, expected = deadline_seconds(request, settings), _expected_bytes(request)
    assert seconds is not None and expected is not None and settings.min_rate is not None, "no deadline to pass"
    return DownloadTimeout(
        request.url,
        f"took longer than {_number(seconds)} s ({_number(settings.deadline_allowance)} s + {expected:,} bytes"
        f" at the minimum rate of {_number(settings.min_rate)} B/s; set total_timeout or min_rate)",
    )


def _expected_bytes(request: DownloadRequest) -> int | None:
    return request.size if request.size is not None else request.max_size


def _number(value: float) -> str:
    """`63`, `2.5`, `10,000`: thousands separated, one decimal at most, none when it is 0; below 0.1, its
    first significant digits (`0.001`), never a 0 for a value that is not."""
    if 0 < abs(value) < 0.1:
        return f"{value:.2g}"
    return f"{value:,.1f}".removesuffix(".0")
