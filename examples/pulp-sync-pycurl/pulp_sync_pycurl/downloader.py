"""CurlDownloader: libcurl's multi interface (pycurl), so the HTTP of every transfer runs in C.

`curl --parallel` is libcurl's multi interface; this engine drives the same interface from the
engine thread, and Python runs only where pulp-sync must: a write callback per chunk (size check,
sha256, the temp file, through BodyWriter), a header callback per header line, and the bookkeeping
when a transfer ends. On 10,000 small files aiohttp alone, keeping no byte, takes longer than curl
takes for the whole job (docs/performance.md in pulp-sync); this is the engine for that case.

At most `download_concurrency` easy handles are in the multi handle at once (and libcurl opens no
more connections than that), each made when a transfer finds none idle, so a fetch of 3 files makes 3
whatever the concurrency; a window of twice as many live jobs bounds what is taken from the
requests, and a job whose outcome the consumer has not taken yet counts as live, so a slow consumer
holds the whole fetch back. A job to retry waits in a heap until its backoff is over, holding no
handle. Retries, backoff, Retry-After and the rate limit follow pulp-sync's RetryPolicy and
RateLimiter, as the built-in engines do.

Redirects are followed here, hop by hop on the same handle, with pulp-sync's Redirects, not by
libcurl, which would send the configured headers to another origin; each hop is checked against the
address policy by its host's name (the addresses a name resolves to are not checked).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pycurl

from downloaders import (
    BaseDownloader,
    BodyWriter,
    DownloadConnectionError,
    DownloadError,
    DownloaderSettings,
    DownloadJob,
    DownloadRequest,
    DownloadResult,
    DownloadTimeout,
    FetchCancelled,
    Handoff,
    HttpStatusError,
    Outcome,
    RateLimiter,
    Redirects,
    RetryPolicy,
    TLSVerificationError,
    UnsupportedURL,
    VerificationError,
    build_ssl_context,
    deadline_seconds,
    deadline_timeout,
    first_hop_headers,
    is_pem,
    parse_retry_after,
    redirect_location,
)

__all__ = ["CurlDownloader", "curl_options"]

WINDOW_FACTOR = 2
"""Jobs alive at once (in flight, backing off or waiting for the consumer), per connection."""
TICK = 0.05
"""Longest wait for the network, in seconds: how soon a closed iterator or a due retry is noticed."""
IDLE_PAUSE = 0.002
"""Seconds between looks at a full hand-off queue while no transfer runs."""
MAX_BUFFER = 10 * 1024 * 1024
"""libcurl's largest receive buffer (CURLOPT_BUFFERSIZE)."""

_HTTP = pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS
_TIMEOUTS = {pycurl.E_OPERATION_TIMEDOUT}
_UNSUPPORTED = {pycurl.E_UNSUPPORTED_PROTOCOL, pycurl.E_URL_MALFORMAT}
_UNTRUSTED = {pycurl.E_PEER_FAILED_VERIFICATION, pycurl.E_SSL_CACERT_BADFILE}
_TOO_LARGE = 100
"""CURLE_TOO_LARGE, which libcurl reports without a message: over HTTP, a header past its 100 kB limit."""
_TLS_MATERIAL = {
    "ca_cert": (pycurl.CAINFO, pycurl.CAINFO_BLOB),
    "client_cert": (pycurl.SSLCERT, pycurl.SSLCERT_BLOB),
    "client_key": (pycurl.SSLKEY, pycurl.SSLKEY_BLOB),
}
"""The libcurl options of each certificate or key setting: for a file's name, and for PEM text."""
_TLS = {
    pycurl.E_SSL_CONNECT_ERROR,
    pycurl.E_SSL_CERTPROBLEM,
    pycurl.E_SSL_CIPHER,
    pycurl.E_SSL_ISSUER_ERROR,
    pycurl.E_SSL_PINNEDPUBKEYNOTMATCH,
    pycurl.E_SSL_INVALIDCERTSTATUS,
}


class CurlDownloader(BaseDownloader):
    """One CurlMulti in the engine thread; see the module's docstring."""

    name = "pycurl"

    def __init__(self, settings: DownloaderSettings) -> None:
        super().__init__(settings)
        build_ssl_context(settings)  # libcurl loads certificates per transfer: refuse bad ones now, as asked

    def _run(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        transfers = _Transfers(self.settings, self.name, temp_dir)
        try:
            _Scheduler(self.settings, transfers, handoff).run(iter(requests))
        finally:
            transfers.close()


def curl_options(settings: DownloaderSettings) -> dict[int, object]:
    """The settings as libcurl options, set once per easy handle (each hop sets its URL and headers).

    Timeouts: the shorter of `connect_timeout` and `sock_connect_timeout` is libcurl's connect
    timeout (DNS, TCP and TLS); `sock_read_timeout` is a low-speed limit of 1 byte/s over that many
    seconds (whole seconds, at least 1: libcurl's resolution), which covers the wait for the
    response too. The attempt's deadline (`deadline_seconds`: `total_timeout`, or one derived from
    the request's size) depends on the request, so it is set per hop (`_Transfers._send`). Certificates
    and keys given as PEM text go to libcurl as blobs, files as their names.
    """
    options: dict[int, object] = {
        pycurl.NOSIGNAL: 1,
        pycurl.FOLLOWLOCATION: 0,  # Redirects follows them
        pycurl.PROTOCOLS: _HTTP,
        pycurl.BUFFERSIZE: min(settings.chunk_size, MAX_BUFFER),
        pycurl.SSL_VERIFYPEER: 1 if settings.tls_validation else 0,
        pycurl.SSL_VERIFYHOST: 2 if settings.tls_validation else 0,
        pycurl.PROXY: settings.proxy_url or "",  # "" also ignores the *_proxy variables, as trust_env=False
    }
    connect = settings.shortest_connect_timeout
    if connect is not None:
        options[pycurl.CONNECTTIMEOUT_MS] = max(1, round(connect * 1000))
    if settings.sock_read_timeout is not None:
        options[pycurl.LOW_SPEED_LIMIT] = 1
        options[pycurl.LOW_SPEED_TIME] = max(1, math.ceil(settings.sock_read_timeout))
    if settings.proxy_url and settings.proxy_username:
        options[pycurl.PROXYUSERPWD] = f"{settings.proxy_username}:{settings.proxy_password or ''}"
    for setting, (file, blob) in _TLS_MATERIAL.items():
        given = getattr(settings, setting)
        if is_pem(given):
            options[blob] = str(given).encode()
        elif given is not None:
            options[file] = str(given)
    return options


_Ended = tuple[DownloadJob, tuple[Path, str, int] | DownloadError]
"""An attempt's end: its job, and its verified file or what went wrong."""


@dataclass
class _Transfer:
    """One attempt, hop after hop of its redirects: the response's status, Retry-After and Location as
    the headers arrive, the body as a BodyWriter made on its first 2xx byte, and an error raised inside
    a callback."""

    job: DownloadJob
    chain: Redirects
    temp_dir: Path
    deadline: float | None = None
    """time.monotonic() when the attempt's deadline passes; None: no deadline."""
    status: int = 0
    reason: str = ""
    retry_after: str | None = None
    location: str | None = None
    body: BodyWriter | None = None
    error: DownloadError | None = None

    def header(self, line: bytes) -> None:
        """Called by libcurl per header line of the hop's response."""
        text = line.decode("latin-1").strip()
        name, _, value = text.partition(":")
        if text.startswith("HTTP/"):
            parts = text.split(" ", 2)
            status = parts[1] if len(parts) > 1 else ""
            self.status = int(status) if status.isdigit() else 0  # not 2xx: no byte of the body is kept
            self.reason, self.retry_after, self.location = parts[2] if len(parts) > 2 else "", None, None
        elif name.lower() == "retry-after":
            self.retry_after = value.strip()
        elif name.lower() == "location":
            self.location = value.strip()

    def write(self, chunk: bytes) -> int | None:
        """Called by libcurl per chunk of body; returning 0 makes it end the transfer (a write error)."""
        if not 200 <= self.status < 300:
            return None  # a redirect's or an error page's body: not the file
        try:
            self._body().write(chunk)
        except DownloadError as error:
            self.error = error
            return 0
        return None

    def finish(self, status: int) -> tuple[Path, str, int]:
        """The verified file of a transfer libcurl completed with `status`; raises what went wrong."""
        url = self.job.request.url
        if not 200 <= status < 300:
            raise HttpStatusError(url, status, self.reason, parse_retry_after(self.retry_after))
        body = self._body()
        return body.path, body.finish(), body.size

    def discard(self) -> None:
        """Remove the temp file unless the transfer verified it."""
        if self.body is not None:
            self.body.discard()

    def _body(self) -> BodyWriter:
        if self.body is None:
            self.body = BodyWriter(self.job.request, self.temp_dir)
        return self.body


class _Transfers:
    """A CurlMulti and its easy handles, at most `download_concurrency`, each set up when first needed and
    reused: one per transfer at once, never one for a download that will not start."""

    def __init__(self, settings: DownloaderSettings, engine: str, temp_dir: Path) -> None:
        self.settings = settings
        self.temp_dir = temp_dir
        self.headers = first_hop_headers(settings, engine)
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_MAX_TOTAL_CONNECTIONS, settings.download_concurrency)
        self.options = curl_options(settings)
        self.idle: list[pycurl.Curl] = []
        self.active: dict[pycurl.Curl, _Transfer] = {}

    @property
    def has_a_slot(self) -> bool:
        """Whether a transfer may start: fewer than `download_concurrency` run (a handle is idle, or one may
        be made)."""
        return len(self.active) < self.settings.download_concurrency

    def start(self, job: DownloadJob) -> None:
        """Begin an attempt of `job` on an idle handle, or a new one; raises DownloadError for a URL it must
        not fetch.

        An easy handle is a concurrency slot: the attempt holds it from here to `_end`, which `job` clocks.
        """
        chain = Redirects(job.request.url, self.headers, self.settings)
        handle = self.idle.pop() if self.idle else _handle(self.options)
        job.hold()
        seconds = deadline_seconds(job.request, self.settings)
        transfer = _Transfer(job, chain, self.temp_dir, None if seconds is None else time.monotonic() + seconds)
        handle.setopt(pycurl.HEADERFUNCTION, transfer.header)
        handle.setopt(pycurl.WRITEFUNCTION, transfer.write)
        self.active[handle] = transfer
        self._send(handle, transfer)

    def step(self, wait: float) -> list[_Ended]:
        """Let libcurl work, waiting up to `wait` s for the network if nothing ended; what ended."""
        self._perform()
        ended = self._ended()
        if not ended and self.active:
            self.multi.select(wait)
            self._perform()
            ended = self._ended()
        return ended

    def close(self) -> None:
        """Stop every transfer, removing its temp file, and free libcurl's handles."""
        for handle, transfer in self.active.items():
            self.multi.remove_handle(handle)
            transfer.discard()
            handle.close()
        for handle in self.idle:
            handle.close()
        self.active.clear()
        self.multi.close()

    def _perform(self) -> None:
        while self.multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            continue

    def _send(self, handle: pycurl.Curl, transfer: _Transfer) -> None:
        """Request the transfer's current hop, with its headers, libcurl's timeout what is left of the
        attempt's deadline (0: none; 1 ms once it has passed, which ends the transfer at once)."""
        left = None if transfer.deadline is None else transfer.deadline - time.monotonic()
        handle.setopt(pycurl.TIMEOUT_MS, 0 if left is None else max(1, round(left * 1000)))
        handle.setopt(pycurl.URL, transfer.chain.url)
        handle.setopt(pycurl.HTTPHEADER, [f"{name}: {value}" for name, value in transfer.chain.headers.items()])
        self.multi.add_handle(handle)

    def _ended(self) -> list[_Ended]:
        ended = []
        while True:
            queued, completed, failed = self.multi.info_read()
            ended += [self._end(handle, 0, "") for handle in completed]
            ended += [self._end(handle, errno, message) for handle, errno, message in failed]
            if not queued:
                return [attempt for attempt in ended if attempt is not None]

    def _end(self, handle: pycurl.Curl, errno: int, message: str) -> _Ended | None:
        """The attempt's end, or None when the hop was a redirect and the next one is on its way."""
        self.multi.remove_handle(handle)
        transfer = self.active[handle]
        try:
            body = self._body_or_next_hop(handle, transfer, errno, message)
            if body is None:
                return None
            ended: tuple[Path, str, int] | DownloadError = body
        except DownloadError as error:
            transfer.discard()
            ended = error
        del self.active[handle]
        self.idle.append(handle)
        transfer.job.release()
        return transfer.job, ended

    def _body_or_next_hop(
        self, handle: pycurl.Curl, transfer: _Transfer, errno: int, message: str
    ) -> tuple[Path, str, int] | None:
        """The verified file of the hop libcurl ended, or None once a redirect's next hop is sent (`chain`
        refuses one it must not follow); raises what went wrong."""
        if transfer.error is not None:
            raise transfer.error
        if errno in _TIMEOUTS and transfer.deadline is not None and time.monotonic() >= transfer.deadline:
            raise deadline_timeout(transfer.job.request, self.settings)
        if errno:
            raise _translate(transfer.job.request.url, errno, message)
        status = handle.getinfo(pycurl.RESPONSE_CODE)
        location = redirect_location(status, transfer.location)
        if location is None:
            return transfer.finish(status)
        transfer.chain.follow(location)
        self._send(handle, transfer)
        return None


@dataclass(order=True)
class _Due:
    """A job waiting for its time: a retry's backoff, or a start slot the rate limit reserved."""

    at: float
    order: int
    job: DownloadJob = field(compare=False)
    slot_reserved: bool = field(compare=False, default=False)


class _Scheduler:
    """Which job starts when, what each ending means, and handing outcomes over in order of ending."""

    def __init__(self, settings: DownloaderSettings, transfers: _Transfers, handoff: Handoff) -> None:
        self.transfers = transfers
        self.handoff = handoff
        self.policy = RetryPolicy(settings)
        self.limiter = RateLimiter(settings.rate_limit)
        self.window = WINDOW_FACTOR * settings.download_concurrency
        self.alive = 0
        self.due: list[_Due] = []
        self.ready: deque[Outcome] = deque()
        self._order = itertools.count()

    def run(self, requests: Iterator[DownloadRequest]) -> None:
        """Until every request has an outcome the consumer took; raises FetchCancelled once it stops."""
        exhausted = False
        try:
            while not (exhausted and self.alive == 0):
                if self.handoff.cancelled.is_set():
                    raise FetchCancelled()
                self._hand_over()
                exhausted = self._start(requests, exhausted)
                if self.transfers.active:
                    for job, ended in self.transfers.step(self._wait()):
                        self._settle(job, ended)
                elif self.alive:
                    time.sleep(min(self._wait(), IDLE_PAUSE if self.ready else TICK))
        finally:
            for outcome in self.ready:
                if isinstance(outcome, DownloadResult):
                    outcome.path.unlink(missing_ok=True)  # never handed over: still ours to remove

    def _hand_over(self) -> None:
        while self.ready and self.handoff.try_emit(self.ready[0]):
            self.ready.popleft()
            self.alive -= 1

    def _start(self, requests: Iterator[DownloadRequest], exhausted: bool) -> bool:
        """Start what may start in the free slots; whether the requests have run out."""
        while self.transfers.has_a_slot:
            if self.due and self.due[0].at <= time.monotonic():
                waiting = heapq.heappop(self.due)
                self._attempt(waiting.job, waiting.slot_reserved)
            elif not exhausted and self.alive < self.window:
                request = next(requests, None)
                if request is None:
                    return True
                self.alive += 1
                self._attempt(DownloadJob(request), slot_reserved=False)
            else:
                break
        return exhausted

    def _attempt(self, job: DownloadJob, slot_reserved: bool) -> None:
        if not slot_reserved and (delay := self.limiter.reserve()):
            self._later(job, delay, slot_reserved=True)
            return
        job.attempts += 1
        try:
            self.transfers.start(job)
        except DownloadError as error:  # refused before any connection
            self._settle(job, error)

    def _settle(self, job: DownloadJob, ended: tuple[Path, str, int] | DownloadError) -> None:
        if not isinstance(ended, DownloadError):
            self.ready.append(job.result(*ended))
            return
        job.mismatches += isinstance(ended, VerificationError)
        if self.policy.should_retry(ended, job.attempts, job.mismatches):
            self._later(job, job.back_off(self.policy.delay(ended, job.attempts)), slot_reserved=False)
        else:
            self.ready.append(job.failure(ended))

    def _later(self, job: DownloadJob, delay: float, slot_reserved: bool) -> None:
        heapq.heappush(self.due, _Due(time.monotonic() + delay, next(self._order), job, slot_reserved))

    def _wait(self) -> float:
        """How long the network may be waited for: until the next due job, at most TICK."""
        if not self.due:
            return TICK
        return min(TICK, max(0.0, self.due[0].at - time.monotonic()))


def _handle(options: dict[int, object]) -> pycurl.Curl:
    handle = pycurl.Curl()
    for option, value in options.items():
        handle.setopt(option, value)
    return handle


def _translate(url: str, errno: int, message: str) -> DownloadError:
    """libcurl's error codes as the contract's errors, at one place."""
    if errno in _TIMEOUTS:
        return DownloadTimeout(url, f"timed out: {message}")
    if errno in _UNSUPPORTED:
        return UnsupportedURL(url, f"only http and https URLs are fetched: {message}")
    if errno in _UNTRUSTED:
        return TLSVerificationError(url, f"TLS certificate not trusted: {message}")
    if errno in _TLS:
        return TLSVerificationError(url, f"TLS error: {message}")
    if errno == _TOO_LARGE:
        message = message or "a response header larger than libcurl accepts"
    return DownloadConnectionError(url, f"connection failed: {message or f'libcurl error {errno}'}")
