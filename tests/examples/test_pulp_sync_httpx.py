"""The httpx plugin's errors as the contract's (examples/pulp-sync-httpx); its behaviour is the conformance
suite's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from pulp_sync_httpx.downloader import HttpxDownloader, _translate

from downloaders import DownloadConnectionError, DownloadRequest
from tests.downloaders.test_bounds import fetch_all, three_files  # noqa: F401 - a fixture, used by name

URL = "http://127.0.0.1/f.bin"


def test_a_transport_error_without_text_is_named_by_its_type() -> None:
    # httpx's ReadError for a connection reset before the response has no text of its own
    error = _translate(URL, httpx.ReadError(""))
    assert isinstance(error, DownloadConnectionError)
    assert error.message == "connection failed: ReadError"


def test_a_transport_error_with_text_says_it() -> None:
    error = _translate(URL, httpx.ConnectError("[Errno 111] Connection refused"))
    assert isinstance(error, DownloadConnectionError)
    assert error.message == "connection failed: [Errno 111] Connection refused"


def test_a_worker_starts_only_for_a_job(
    three_files: list[DownloadRequest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3 files at a concurrency of 200 run 3 worker coroutines, not 200 up front."""
    started = 0
    work = HttpxDownloader._work

    async def counted(self: HttpxDownloader, *args: Any) -> None:
        nonlocal started
        started += 1
        await work(self, *args)

    monkeypatch.setattr(HttpxDownloader, "_work", counted)
    fetch_all(HttpxDownloader, three_files, tmp_path)
    assert 1 <= started <= 3
