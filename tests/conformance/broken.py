"""Deliberately broken downloaders: the conformance suite must fail each, saying which rule it broke.

They are registered only by the tests (an entry point in a temporary dist-info, or module:Class on
the command line), never in setup.py, so `pulp-sync downloaders` never lists them.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Generator, Iterable

from downloaders import DownloadRequest, DownloadResult, Outcome
from downloaders.asyncio_engine import AsyncioDownloader
from downloaders.futures_engine import FuturesDownloader

__all__ = ["IgnoresDigest", "Hoards", "ClocksTheWait"]


class IgnoresDigest(FuturesDownloader):
    """Drops the sha256 from every request before fetching it, so a corrupt body passes as a result."""

    name = "ignores-digest"

    def fetch(self, requests: Iterable[DownloadRequest], temp_dir: Path) -> Generator[Outcome, None, None]:
        asked: dict[str, DownloadRequest] = {}

        def unverified() -> Iterable[DownloadRequest]:
            for request in requests:
                asked[request.url] = request
                yield replace(request, sha256=None)

        with closing(super().fetch(unverified(), temp_dir)) as outcomes:
            for outcome in outcomes:
                yield replace(outcome, request=asked[outcome.request.url])


class Hoards(FuturesDownloader):
    """Downloads everything before it yields anything: right bytes, but memory grows with the manifest."""

    name = "hoards"

    def fetch(self, requests: Iterable[DownloadRequest], temp_dir: Path) -> Generator[Outcome, None, None]:
        yield from list(super().fetch(requests, temp_dir))


class ClocksTheWait(AsyncioDownloader):
    """Reports as latency all the time from taking a request on to its file, as asyncio did before issue 18:
    its tasks exist before they hold a slot, so the wait for the slot was counted too."""

    name = "clocks-the-wait"

    def fetch(self, requests: Iterable[DownloadRequest], temp_dir: Path) -> Generator[Outcome, None, None]:
        with closing(super().fetch(requests, temp_dir)) as outcomes:
            for outcome in outcomes:
                if isinstance(outcome, DownloadResult):
                    outcome = replace(outcome, latency=outcome.seconds, queue_seconds=None)
                yield outcome
