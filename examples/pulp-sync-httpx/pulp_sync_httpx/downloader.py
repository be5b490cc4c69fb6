"""HttpxDownloader: httpx's AsyncClient over HTTP/1.1, one connection pool of `download_concurrency`.

The scheduling is this plugin's own: up to `download_concurrency` worker coroutines take jobs from one
queue, one attempt at a time, so at most that many requests are in flight and the pool never makes
anyone wait; a worker starts with each job queued until there are that many, so a fetch of 3 files runs
3 whatever the concurrency. A job to retry goes back to the queue once its backoff is over (a timer, not a
sleeping worker), so backing off holds no connection. A window of twice as many live jobs bounds
what is taken from the requests, and a worker that finished a download waits for room in the
bounded hand-off before it takes the next job: a slow consumer holds the whole fetch back.

The contract's parts come from `downloaders`, as for any plugin: BaseDownloader (the engine thread
and the hand-off), BodyWriter (a verified temp file or none), RetryPolicy, RateLimiter, the
request headers, the SSL context and Redirects, so a comparison with the built-ins measures the
engine alone. Redirects are followed here, hop by hop, not by httpx, which would keep the configured
headers on a hop to another origin; each hop is checked against the address policy by its host's
name (httpx has no hook for the addresses a name resolves to, so those are not checked).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Iterable, Iterator
from contextlib import aclosing
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path

import httpx

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
    parse_retry_after,
    redirect_location,
)

__all__ = ["HttpxDownloader", "client_timeout"]

WINDOW_FACTOR = 2
"""Jobs alive at once (in flight, backing off or waiting for the consumer), per worker."""
_POLL_FIRST, _POLL_MAX = 0.001, 0.02
"""Seconds between tries to hand an outcome to a consumer that is behind: doubling from the first."""

_Body = tuple[Path, str, int]


@dataclass
class _Fetch:
    """What the workers of one fetch share."""

    client: httpx.AsyncClient
    temp_dir: Path
    handoff: Handoff
    policy: RetryPolicy
    limiter: RateLimiter
    window: asyncio.Semaphore
    jobs: asyncio.Queue[DownloadJob | None] = field(default_factory=asyncio.Queue)


class HttpxDownloader(BaseDownloader):
    """Worker coroutines on one event loop in the engine thread, sharing an httpx.AsyncClient."""

    name = "httpx"

    def __init__(self, settings: DownloaderSettings) -> None:
        super().__init__(settings)
        self._ssl = build_ssl_context(settings)  # a certificate that cannot be loaded is refused here
        self._headers = first_hop_headers(settings, self.name)

    def _run(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        try:
            asyncio.run(self._main(iter(requests), temp_dir, handoff))
        except ExceptionGroup as crashed:
            raise crashed.exceptions[0] from None  # a worker's crash, not a download's failure: shown as is

    async def _main(self, requests: Iterator[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        main = asyncio.current_task()
        assert main is not None
        handoff.cancel_on_close(main)
        window = WINDOW_FACTOR * self.settings.download_concurrency
        async with self._client() as client, asyncio.TaskGroup() as group:
            fetch = _Fetch(
                client,
                temp_dir,
                handoff,
                RetryPolicy(self.settings),
                RateLimiter(self.settings.rate_limit),
                asyncio.Semaphore(window),
            )
            workers = _Workers(lambda: group.create_task(self._work(fetch)), self.settings.download_concurrency)
            await _feed(requests, fetch, window, workers)

    def _client(self) -> httpx.AsyncClient:
        """No headers, auth or cookies of the client's own: each hop sends its own headers (`Redirects`)."""
        settings = self.settings
        pool = settings.download_concurrency
        return httpx.AsyncClient(
            http1=True,
            http2=False,
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
            timeout=client_timeout(settings),
            verify=self._ssl,
            cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),  # keeps none
            proxy=_proxy(settings),
            follow_redirects=False,
            trust_env=False,
        )

    async def _work(self, fetch: _Fetch) -> None:
        """Attempt jobs one after another; put a job to retry back after its backoff, hand over the others."""
        loop = asyncio.get_running_loop()
        while (job := await fetch.jobs.get()) is not None:
            job.attempts += 1
            try:
                path, digest, size = await self._attempt(fetch, job)
            except DownloadError as error:
                job.mismatches += isinstance(error, VerificationError)
                if fetch.policy.should_retry(error, job.attempts, job.mismatches):
                    loop.call_later(job.back_off(fetch.policy.delay(error, job.attempts)), fetch.jobs.put_nowait, job)
                    continue
                outcome: Outcome = job.failure(error)
            else:
                outcome = job.result(path, digest, size)
            await _hand_over(outcome, fetch.handoff)
            fetch.window.release()

    async def _attempt(self, fetch: _Fetch, job: DownloadJob) -> _Body:
        """One GET, with the attempt's deadline (a total timeout, which httpx lacks) around the whole of it.

        A worker is a concurrency slot: `job` clocks the attempt from the moment the rate limit lets it
        start; its time in the queue of jobs, waiting for a worker, is its queue time.
        """
        request = job.request
        chain = Redirects(request.url, self._headers, self.settings)  # refuses a URL it must not fetch
        await asyncio.sleep(fetch.limiter.reserve())
        try:
            with job.holding():
                async with asyncio.timeout(deadline_seconds(request, self.settings)):
                    return await self._stream(fetch, request, chain)
        except TimeoutError as error:
            raise deadline_timeout(request, self.settings) from error

    async def _stream(self, fetch: _Fetch, request: DownloadRequest, chain: Redirects) -> _Body:
        url = request.url
        try:
            with BodyWriter(request, fetch.temp_dir) as body:
                async with aclosing(await _response(fetch.client, chain)) as response:
                    if not response.is_success:
                        retry_after = parse_retry_after(response.headers.get("Retry-After"))
                        raise HttpStatusError(url, response.status_code, response.reason_phrase, retry_after)
                    async for chunk in response.aiter_raw(self.settings.chunk_size):
                        body.write(chunk)
                return body.path, body.finish(), body.size
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            raise _translate(url, error) from error


def client_timeout(settings: DownloaderSettings) -> httpx.Timeout:
    """The settings' timeouts in httpx's terms.

    pool: connect_timeout (getting a connection, waiting for the pool included); connect: the
    shorter of sock_connect_timeout and connect_timeout (TCP and TLS); read: sock_read_timeout,
    and write too (a socket that takes no bytes is as stuck as one that sends none).
    """
    return httpx.Timeout(
        connect=settings.shortest_connect_timeout,
        read=settings.sock_read_timeout,
        write=settings.sock_read_timeout,
        pool=settings.connect_timeout,
    )


async def _response(client: httpx.AsyncClient, chain: Redirects) -> httpx.Response:
    """The streamed response at the end of the request's redirects, each hop checked by `chain` first."""
    while True:
        response = await client.send(client.build_request("GET", chain.url, headers=chain.headers), stream=True)
        location = redirect_location(response.status_code, response.headers.get("Location"))
        if location is None:
            return response
        await response.aclose()  # not read: a redirect's body may never end
        chain.follow(location)


def _proxy(settings: DownloaderSettings) -> httpx.Proxy | None:
    if not settings.proxy_url:
        return None
    auth = (settings.proxy_username, settings.proxy_password or "") if settings.proxy_username else None
    return httpx.Proxy(settings.proxy_url, auth=auth)


@dataclass
class _Workers:
    """The worker coroutines of a fetch, started one per job queued until there are `most` of them."""

    start: Callable[[], object]
    most: int
    started: int = 0

    def one_more(self) -> None:
        if self.started < self.most:
            self.start()
            self.started += 1


async def _feed(requests: Iterator[DownloadRequest], fetch: _Fetch, window: int, workers: _Workers) -> None:
    """Queue a job per request while fewer than `window` are alive, with a worker for it while there are
    fewer than the concurrency; once all have ended, stop the workers."""
    while True:
        await fetch.window.acquire()
        request = next(requests, None)
        if request is None:
            break
        fetch.jobs.put_nowait(DownloadJob(request))
        workers.one_more()
    for _ in range(window - 1):
        await fetch.window.acquire()
    for _ in range(workers.started):
        fetch.jobs.put_nowait(None)


async def _hand_over(outcome: Outcome, handoff: Handoff) -> None:
    """Put the outcome into the bounded hand-off, waiting without blocking the loop while it is full."""
    pause = _POLL_FIRST
    try:
        while not handoff.try_emit(outcome):
            await asyncio.sleep(pause)
            pause = min(2 * pause, _POLL_MAX)
    except asyncio.CancelledError:
        if isinstance(outcome, DownloadResult):
            outcome.path.unlink(missing_ok=True)  # never handed over: still ours to remove
        raise


def _translate(url: str, error: Exception) -> DownloadError:
    """httpx's errors as the contract's, at one place."""
    if isinstance(error, httpx.TimeoutException):
        return DownloadTimeout(url, f"timed out: {type(error).__name__} {error}".rstrip())
    if isinstance(error, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return UnsupportedURL(url, f"not a URL we can fetch: {error}")
    tls = _tls_cause(error) if isinstance(error, httpx.ConnectError) else None
    if isinstance(tls, ssl.SSLCertVerificationError):
        return TLSVerificationError(url, f"TLS certificate not trusted: {tls}")
    if tls is not None:
        return TLSVerificationError(url, f"TLS error: {tls}")
    if isinstance(error, httpx.TransportError):
        return DownloadConnectionError(url, f"connection failed: {str(error) or type(error).__name__}")
    return DownloadError(url, f"{type(error).__name__}: {error}")


def _tls_cause(error: BaseException) -> ssl.SSLError | None:
    """The ssl error under httpx's and httpcore's wrappers, if there is one."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ssl.SSLError):
        cause = cause.__cause__ or cause.__context__
    return cause
