"""Deadlines while the body trickles in: `total_timeout`, or without it the deadline derived from the size
and `min_rate` (downloaders/deadlines.py), ends an attempt on time in every installed downloader, however
slowly (and steadily, so that no read timeout fires) the server sends."""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from conformance.checks import Subject
from downloaders import DownloadFailure, DownloadRequest, DownloadTimeout, Outcome
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


def _fetch_trickling(subject: Subject, temp_dir: Path, **settings: Any) -> tuple[Outcome, float]:
    """The outcome of one request for the trickling body, and the seconds it took."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", _trickle)
    with serve_app(app) as url:
        request = DownloadRequest(url + "f.bin", "f.bin", hashlib.sha256(BODY).hexdigest(), len(BODY))
        started = time.monotonic()
        [outcome] = subject.fetch_all([request], temp_dir, sock_read_timeout=10, max_retries=0, **settings)
        return outcome, time.monotonic() - started


def test_total_timeout_ends_a_trickling_body_on_time(subject: Subject, tmp_path: Path) -> None:
    outcome, seconds = _fetch_trickling(subject, tmp_path, total_timeout=3)

    assert isinstance(outcome, DownloadFailure) and isinstance(outcome.error, DownloadTimeout), outcome
    assert outcome.error.message == "took longer than the total_timeout of 3 s", outcome.error
    assert seconds < 5, f"{subject.name} held a trickling body for {seconds:.1f} s past a 3 s total_timeout"
    assert not list(tmp_path.iterdir()), "no partial file is left"


def test_without_total_timeout_the_size_at_min_rate_ends_a_trickling_body(subject: Subject, tmp_path: Path) -> None:
    outcome, seconds = _fetch_trickling(subject, tmp_path, total_timeout=None, min_rate=100, deadline_allowance=1.5)

    assert isinstance(outcome, DownloadFailure) and isinstance(outcome.error, DownloadTimeout), outcome
    assert outcome.error.message == (
        "took longer than 2.5 s (1.5 s + 100 bytes at the minimum rate of 100 B/s; set total_timeout or min_rate)"
    ), outcome.error
    assert seconds < 5, f"{subject.name} held a trickling body for {seconds:.1f} s past its derived 2.5 s deadline"
    assert not list(tmp_path.iterdir()), "no partial file is left"
