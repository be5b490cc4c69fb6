"""`deadline_seconds` and `deadline_timeout`: the bound of one attempt, and the error that says which bound passed."""

from __future__ import annotations

import pytest

from downloaders import (
    DownloaderSettings,
    DownloadRequest,
    DownloadTimeout,
    deadline_seconds,
    deadline_timeout,
    defaults,
)

URL = "http://127.0.0.1/f.bin"


def _request(size: int | None = None, max_size: int | None = None) -> DownloadRequest:
    return DownloadRequest(URL, "f.bin", size=size, max_size=max_size)


def test_the_default_deadline_is_the_allowance_plus_the_size_at_the_minimum_rate() -> None:
    seconds = deadline_seconds(_request(size=3_000), DownloaderSettings())
    assert seconds == defaults.DEADLINE_ALLOWANCE + 3_000 / defaults.MIN_RATE == 60.3


@pytest.mark.parametrize(
    ("request_", "settings", "seconds"),
    [
        (_request(size=3_000), DownloaderSettings(total_timeout=5), 5),
        (_request(), DownloaderSettings(total_timeout=5), 5),
        (_request(size=3_000), DownloaderSettings(min_rate=1_000, deadline_allowance=1), 4),
        (_request(size=0), DownloaderSettings(deadline_allowance=0.5), 0.5),
        (_request(max_size=2_000), DownloaderSettings(min_rate=1_000, deadline_allowance=1), 3),
        (_request(size=3_000, max_size=10**9), DownloaderSettings(min_rate=1_000, deadline_allowance=1), 4),
        (_request(), DownloaderSettings(), None),
        (_request(size=3_000), DownloaderSettings(min_rate=None), None),
    ],
    ids=[
        "total_timeout-wins",
        "total_timeout-without-size",
        "derived",
        "empty-body",
        "max_size-bounds-an-unknown-size",
        "size-over-max_size",
        "no-size-no-deadline",
        "min_rate-None-disables",
    ],
)
def test_deadline_seconds(request_: DownloadRequest, settings: DownloaderSettings, seconds: float | None) -> None:
    assert deadline_seconds(request_, settings) == seconds


def test_the_derived_deadline_error_says_how_it_was_derived_on_one_line() -> None:
    error = deadline_timeout(_request(size=3_000), DownloaderSettings(min_rate=10_000, deadline_allowance=60))
    assert isinstance(error, DownloadTimeout) and error.retryable and error.url == URL
    assert error.message == (
        "took longer than 60.3 s (60 s + 3,000 bytes at the minimum rate of 10,000 B/s;"
        " set total_timeout or min_rate)"
    )
    assert str(error) == f"{error.message} ({URL})" and "\n" not in str(error)


def test_the_total_timeout_error_names_it() -> None:
    error = deadline_timeout(_request(size=3_000), DownloaderSettings(total_timeout=2.5))
    assert error.message == "took longer than the total_timeout of 2.5 s"
    tiny = deadline_timeout(_request(size=3_000), DownloaderSettings(total_timeout=0.001))
    assert tiny.message == "took longer than the total_timeout of 0.001 s", "never a 0 for a value that is not"


@pytest.mark.parametrize(
    "settings",
    [{"min_rate": 0}, {"min_rate": -1.0}, {"min_rate": float("inf")}, {"min_rate": float("nan")},
     {"deadline_allowance": -1}, {"deadline_allowance": float("inf")}, {"deadline_allowance": float("nan")}],
    ids=repr,
)
def test_bad_deadline_settings_are_refused_when_built(settings: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(settings))):
        DownloaderSettings(**settings)  # type: ignore[arg-type]
