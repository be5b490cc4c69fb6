"""Deliberately broken downloaders: the conformance suite must fail each, saying which rule it broke.

They are registered only by the tests (an entry point in a temporary dist-info, or module:Class on
the command line), never in setup.py, so `pulp-sync downloaders` never lists them. Each breaks one
rule the way a plugin could by mistake: a setting read but not passed on, work left to the HTTP
library that the contract wants done otherwise, a retry slept out in the wrong place.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Mapping
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import urllib3

from downloaders import (
    AddressPolicy,
    BaseDownloader,
    DownloadError,
    DownloaderSettings,
    DownloadFailure,
    DownloadJob,
    DownloadRequest,
    DownloadResult,
    FetchCancelled,
    Handoff,
    Outcome,
    RateLimiter,
    Redirects,
    RetryPolicy,
    VerificationError,
    build_ssl_context,
)
from downloaders.asyncio_engine import AsyncioDownloader, _Client
from downloaders.futures_engine import FuturesDownloader

__all__ = [
    "IgnoresDigest",
    "Hoards",
    "ClocksTheWait",
    "BacksOffInItsSlot",
    "IgnoresBackoffMax",
    "IgnoresConnectTimeouts",
    "IgnoresTotalTimeout",
    "RaisesFailures",
    "ForgetsWhatItWaitsToHandOver",
    "StopsAfterFiveRedirects",
    "LetsAiohttpRedirect",
    "IgnoresAddressPolicy",
    "KeepsHeadersAcrossOrigins",
    "DecodesContent",
    "IgnoresMaxSize",
    "SendsNoCredentials",
    "IgnoresProxy",
    "NeverValidatesTLS",
    "AlwaysValidatesTLS",
    "IgnoresCaCert",
    "IgnoresClientCert",
    "LoadsCertificatesLate",
    "IgnoresRateLimit",
]


class _Forgets(FuturesDownloader):
    """Drops one field from every request before fetching it, and puts the request back on its outcome."""

    forgotten: ClassVar[str]

    def fetch(self, requests: Iterable[DownloadRequest], temp_dir: Path) -> Generator[Outcome, None, None]:
        asked: dict[str, DownloadRequest] = {}

        def forgetting() -> Iterable[DownloadRequest]:
            for request in requests:
                asked[request.url] = request
                yield replace(request, **{self.forgotten: None})

        with closing(super().fetch(forgetting(), temp_dir)) as outcomes:
            for outcome in outcomes:
                yield replace(outcome, request=asked[outcome.request.url])


class IgnoresDigest(_Forgets):
    """Drops the sha256 from every request, so a corrupt body passes as a result (rule 2)."""

    name = "ignores-digest"
    forgotten = "sha256"


class IgnoresMaxSize(_Forgets):
    """Drops the max_size from every request, so a body of any length is kept (rule 19)."""

    name = "ignores-max-size"
    forgotten = "max_size"


class _Changes(FuturesDownloader):
    """Reads its settings, then works with some of them changed: a setting taken but never passed on."""

    changes: ClassVar[Mapping[str, Any]]

    def __init__(self, settings: DownloaderSettings) -> None:
        super().__init__(replace(settings, **self.changes))


class IgnoresBackoffMax(_Changes):
    """Waits for as long as any Retry-After asks (rule 7)."""

    name = "ignores-backoff-max"
    changes = {"backoff_max": 3600.0}


class IgnoresConnectTimeouts(_Changes):
    """Waits for a connection as long as the kernel does (rule 8)."""

    name = "ignores-connect-timeouts"
    changes = {"connect_timeout": None, "sock_connect_timeout": None}


class IgnoresTotalTimeout(_Changes):
    """Bounds an attempt by sock_read_timeout alone, which a steady trickle never runs out (rule 8)."""

    name = "ignores-total-timeout"
    changes = {"total_timeout": None, "min_rate": None}


class IgnoresAddressPolicy(_Changes):
    """Connects wherever a URL or a redirect says (rule 16)."""

    name = "ignores-address-policy"
    changes = {"address_policy": AddressPolicy(deny=())}


class SendsNoCredentials(_Changes):
    """Sends neither the configured headers nor basic auth (rule 20)."""

    name = "sends-no-credentials"
    changes = {"headers": {}, "username": None, "password": None}


class IgnoresProxy(_Changes):
    """Goes to every server directly (rule 21)."""

    name = "ignores-proxy"
    changes = {"proxy_url": None}


class NeverValidatesTLS(_Changes):
    """Trusts any certificate (rule 22)."""

    name = "never-validates-tls"
    changes = {"tls_validation": False}


class AlwaysValidatesTLS(_Changes):
    """Validates certificates even when told not to (rule 22)."""

    name = "always-validates-tls"
    changes = {"tls_validation": True}


class IgnoresCaCert(_Changes):
    """Trusts the system's CAs only (rule 22)."""

    name = "ignores-ca-cert"
    changes = {"ca_cert": None}


class IgnoresClientCert(_Changes):
    """Shows no client certificate (rule 22)."""

    name = "ignores-client-cert"
    changes = {"client_cert": None, "client_key": None}


class IgnoresRateLimit(_Changes):
    """Starts requests as fast as its slots allow (rule 23)."""

    name = "ignores-rate-limit"
    changes = {"rate_limit": None}


class IgnoresItsChangingLimit(FuturesDownloader):
    """Says it follows a changing limit (as its parent does), but keeps max_concurrency downloads in flight
    whatever the remote answers (rule 24)."""

    name = "ignores-its-changing-limit"

    def __init__(self, settings: DownloaderSettings) -> None:
        FuturesDownloader.__init__(self, replace(settings, auto_concurrency=False,
                                                 download_concurrency=settings.max_concurrency))


class LoadsCertificatesLate(FuturesDownloader):
    """Loads its certificates when a fetch starts, so a bad one shows only then, as every request's
    failure, not when the downloader is made (rule 22)."""

    name = "loads-certificates-late"

    def __init__(self, settings: DownloaderSettings) -> None:
        BaseDownloader.__init__(self, settings)

    def _run(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        self._ssl = build_ssl_context(self.settings)
        super()._run(requests, temp_dir, handoff)


class BacksOffInItsSlot(FuturesDownloader):
    """Retries in the thread of the attempt that failed, sleeping out the backoff there: the download
    keeps its slot while it waits (rule 5)."""

    name = "backs-off-in-its-slot"

    def _attempt(
        self,
        pool: urllib3.PoolManager,
        limiter: RateLimiter,
        job: DownloadJob,
        temp_dir: Path,
        cancelled: threading.Event,
    ) -> DownloadResult:
        policy = RetryPolicy(self.settings)
        while True:
            try:
                return super()._attempt(pool, limiter, job, temp_dir, cancelled)
            except DownloadError as error:
                job.mismatches += isinstance(error, VerificationError)
                if not policy.should_retry(error, job.attempts, job.mismatches):
                    raise
                time.sleep(job.back_off(policy.delay(error, job.attempts)))
                job.attempts += 1


class RaisesFailures(FuturesDownloader):
    """Raises a request's error out of fetch instead of yielding its DownloadFailure (rule 9)."""

    name = "raises-failures"

    def fetch(self, requests: Iterable[DownloadRequest], temp_dir: Path) -> Generator[Outcome, None, None]:
        with closing(super().fetch(requests, temp_dir)) as outcomes:
            for outcome in outcomes:
                if isinstance(outcome, DownloadFailure):
                    raise outcome.error
                yield outcome


class ForgetsWhatItWaitsToHandOver(FuturesDownloader):
    """Waits for room in the hand-off by itself, and when the consumer closes the fetch meanwhile, forgets
    the outcome it was waiting with: its file stays in temp_dir (rule 10)."""

    name = "forgets-what-it-waits-to-hand-over"

    def _run(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        super()._run(requests, temp_dir, _Forgetful(handoff))  # type: ignore[arg-type]


class _Forgetful:
    """The parts of a Handoff the futures engine uses, `emit` without removing the file of what it drops."""

    def __init__(self, handoff: Handoff) -> None:
        self._handoff = handoff
        self.cancelled = handoff.cancelled

    def emit(self, outcome: Outcome) -> None:
        while not self._handoff.try_emit(outcome):
            if self.cancelled.wait(0.01):
                raise FetchCancelled()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        self._handoff.on_cancel(callback)


class _AiohttpDoes(AsyncioDownloader):
    """The asyncio engine with its requests' `options` changed: what a plugin on aiohttp gets by leaving
    a job to aiohttp that the contract wants done otherwise."""

    options: ClassVar[Mapping[str, object]]

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[_Client]:
        async with super()._client() as client:
            yield _Passing(client.session, client.proxy, client.targets, self.options)


@dataclass(frozen=True)
class _Passing(_Client):
    """A client sending each request with `options`, and what aiohttp does with them."""

    options: Mapping[str, object] = field(default_factory=dict)

    async def response(self, chain: Redirects) -> Any:
        return await self.session.get(chain.url, headers=chain.headers, **self.proxy, **self.options)


class LetsAiohttpRedirect(_AiohttpDoes):
    """Lets aiohttp follow redirects, which refuses other schemes with an error of its own, taken for a
    connection's failure and retried (rule 15)."""

    name = "lets-aiohttp-redirect"
    options: ClassVar[Mapping[str, object]] = {}


class StopsAfterFiveRedirects(_AiohttpDoes):
    """Lets aiohttp follow redirects, five at most (rule 14)."""

    name = "stops-after-five-redirects"
    options: ClassVar[Mapping[str, object]] = {"max_redirects": 5}


class DecodesContent(_AiohttpDoes):
    """Lets aiohttp undo a Content-Encoding, so the bytes kept are not the ones the manifest names (rule 18)."""

    name = "decodes-content"
    options: ClassVar[Mapping[str, object]] = {"allow_redirects": False, "auto_decompress": True}


class KeepsHeadersAcrossOrigins(AsyncioDownloader):
    """Makes its headers from the settings, then hides the configured ones from `Redirects`, which so does
    not know to drop them on a hop to another origin (rule 17)."""

    name = "keeps-headers-across-origins"

    def __init__(self, settings: DownloaderSettings) -> None:
        super().__init__(settings)
        self.settings = replace(settings, headers={})


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
