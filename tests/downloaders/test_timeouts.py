"""Deadlines while the body trickles in: `total_timeout` ends an attempt on time in every engine, however
slowly (and steadily, so that no read timeout fires) the server sends."""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path

import pytest
from aiohttp import web

from downloaders import DownloaderSettings, DownloadFailure, DownloadRequest, DownloadTimeout, load
from tests.servers import serve_app

BODY = b"x" * 100
"""A small body, sent a byte a second: 100 s if nothing cuts it off."""


async def _trickle(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Length": str(len(BODY))})
    await response.prepare(request)
    for byte in BODY:
        await response.write(bytes([byte]))
        await asyncio.sleep(1)
    return response


@pytest.mark.parametrize("engine", ["asyncio", "futures"])
def test_total_timeout_ends_a_trickling_body_on_time(engine: str, tmp_path: Path) -> None:
    app = web.Application()
    app.router.add_get("/{tail:.*}", _trickle)
    settings = DownloaderSettings(total_timeout=3, sock_read_timeout=10, max_retries=0)
    with serve_app(app) as url:
        request = DownloadRequest(url + "f.bin", "f.bin", hashlib.sha256(BODY).hexdigest(), len(BODY))
        started = time.monotonic()
        [outcome] = list(load(engine)(settings).fetch([request], tmp_path))
        seconds = time.monotonic() - started

    assert isinstance(outcome, DownloadFailure) and isinstance(outcome.error, DownloadTimeout), outcome
    assert seconds < 5, f"{engine} held a trickling body for {seconds:.1f} s past a 3 s total_timeout"
    assert not list(tmp_path.iterdir()), "no partial file is left"

