"""Deliberately broken downloaders: the conformance suite must fail each, saying which rule it broke.

They are registered only by the tests (an entry point in a temporary dist-info, or module:Class on
the command line), never in setup.py, so `pulp-sync downloaders` never lists them.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Generator, Iterable

from downloaders import DownloadRequest, Outcome
from downloaders.futures_engine import FuturesDownloader

__all__ = ["IgnoresDigest", "Hoards"]


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
