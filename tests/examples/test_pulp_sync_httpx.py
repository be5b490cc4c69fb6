"""The httpx plugin's errors as the contract's (examples/pulp-sync-httpx); its behaviour is the conformance
suite's."""

from __future__ import annotations

import httpx
from pulp_sync_httpx.downloader import _translate

from downloaders import DownloadConnectionError

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
