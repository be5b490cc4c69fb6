"""The asyncio engine: aiohttp, one session per fetch, a semaphore as large as the concurrency limit.

Redirects are followed here (`downloaders.redirects`), not by aiohttp, and the session connects only
to the addresses the remote-address policy allows (`_PolicyResolver`, `downloaders.connecting`).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections import deque
from collections.abc import AsyncIterator, Coroutine, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import urlsplit

import aiohttp
from aiohttp import hdrs
from aiohttp.abc import AbstractResolver, ResolveResult

from downloaders.addresses import AddressPolicy
from downloaders.base import BaseDownloader, Handoff
from downloaders.concurrency import ConcurrencyLimit
from downloaders.connecting import ProxiedTargets, allowed_addresses
from downloaders.deadlines import deadline_seconds, deadline_timeout
from downloaders.errors import (
    AddressRefused,
    DownloadConnectionError,
    DownloadError,
    DownloadTimeout,
    HttpStatusError,
    TLSVerificationError,
    VerificationError,
    quoted,
)
from downloaders.headers import first_hop_headers, proxy_headers
from downloaders.offload import HashingLanes, hashing_lanes
from downloaders.redirects import Redirects, redirect_location
from downloaders.retry import DownloadJob, RateLimiter, RetryPolicy, parse_retry_after
from downloaders.settings import DownloaderSettings
from downloaders.tls import build_ssl_context, trusts_system_defaults, untrusted_because
from downloaders.types import DownloadRequest, DownloadResult, Outcome

__all__ = ["AsyncioDownloader"]

_BODY = tuple[Path, str, int]


class AsyncioDownloader(BaseDownloader):
    """Coroutines on one event loop in the engine thread; large bodies hashed in HashingLanes, one
    lane per usable CPU but the loop's (`hashing_lanes`).

    At most `concurrency.limit` requests hold a connection; twice its bound of tasks exist at once
    (the others are backing off or waiting for a slot), so memory stays flat for any manifest.
    """

    name = "asyncio"
    adapts_concurrency = True

    def __init__(self, settings: DownloaderSettings) -> None:
        super().__init__(settings)
        # aiohttp's own default context is made at import; a bad certificate fails here, not in a fetch
        self._ssl: ssl.SSLContext | bool = True if trusts_system_defaults(settings) else build_ssl_context(settings)
        self._headers = first_hop_headers(settings, self.name)

    def _run(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        asyncio.run(self._main(requests, temp_dir, handoff))

    async def _main(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        main = asyncio.current_task()
        assert main is not None
        handoff.cancel_on_close(main)
        policy, limiter = RetryPolicy(self.settings), RateLimiter(self.settings.rate_limit)
        slots = _Slots(self.concurrency)
        window = 2 * self.concurrency.bound
        downloads = _Downloads()
        hashing = HashingLanes(asyncio.get_running_loop(), hashing_lanes(self.concurrency.bound))
        try:
            async with self._client() as client:
                try:
                    for request in requests:
                        if len(downloads.pending) >= window:
                            await downloads.emit_ended(handoff)
                        downloads.start(self._download(client, slots, policy, limiter, hashing, request, temp_dir))
                    while downloads.pending:
                        await downloads.emit_ended(handoff)
                finally:
                    await _abandon(downloads.pending)
        finally:
            hashing.close()

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[_Client]:
        """One fetch's session, resolving through the address policy; no default headers and no cookies
        (a cookie set by one origin must not reach another): each hop's headers are its own. No total
        timeout: each attempt's deadline (`_attempt`) bounds its redirects and its body together."""
        settings = self.settings
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=settings.connect_timeout,
            sock_connect=settings.sock_connect_timeout,
            sock_read=settings.sock_read_timeout,
        )
        resolver = _PolicyResolver(settings.address_policy)  # a connector closes only a resolver it made
        try:
            async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.concurrency.bound, ssl=self._ssl, resolver=resolver),
                timeout=timeout,
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
                trust_env=False,
            ) as session:
                yield _Client(session, self._proxy_arguments(), ProxiedTargets(settings))
        finally:
            await resolver.close()

    async def _download(
        self,
        client: _Client,
        slots: _Slots,
        policy: RetryPolicy,
        limiter: RateLimiter,
        hashing: HashingLanes,
        request: DownloadRequest,
        temp_dir: Path,
    ) -> Outcome:
        """Attempts until one succeeds or RetryPolicy says to stop. The task exists before it holds a
        slot (see the class), so `job` clocks the wait for the slot apart from the attempt."""
        job = DownloadJob(request)
        while True:
            job.attempts += 1
            try:
                chain = Redirects(request.url, self._headers, self.settings)
                if delay := limiter.reserve():
                    await asyncio.sleep(delay)
                async with slots:
                    with job.holding(), self.concurrency.attempt():
                        path, digest, size = await self._attempt(client, hashing, request, chain, temp_dir)
                return job.result(path, digest, size)
            except DownloadError as error:
                job.mismatches += isinstance(error, VerificationError)
                if not policy.should_retry(error, job.attempts, job.mismatches):
                    return job.failure(error)
                await asyncio.sleep(job.back_off(policy.delay(error, job.attempts)))

    async def _attempt(
        self, client: _Client, hashing: HashingLanes, request: DownloadRequest, chain: Redirects, temp_dir: Path
    ) -> _BODY:
        """`_get` within the attempt's deadline (`deadline_seconds`). `_get` turns aiohttp's timeouts into
        DownloadTimeout, so a TimeoutError out of the block is the deadline's."""
        try:
            async with asyncio.timeout(deadline_seconds(request, self.settings)):
                return await self._get(client, hashing, request, chain, temp_dir)
        except TimeoutError as error:
            raise deadline_timeout(request, self.settings) from error

    async def _get(
        self, client: _Client, hashing: HashingLanes, request: DownloadRequest, chain: Redirects, temp_dir: Path
    ) -> _BODY:
        url = request.url
        try:
            async with await client.response(chain) as response:
                if not 200 <= response.status < 300:
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
                    raise HttpStatusError(url, response.status, response.reason or "", retry_after)
                with hashing.body(request, temp_dir) as body:
                    async for chunk in response.content.iter_chunked(self.settings.chunk_size):
                        await body.write(chunk)
                        self.concurrency.transferred(len(chunk))
                    return body.path, await body.finish(), body.size
        except AddressRefused as error:  # a refusal when connecting names the host, not the URL
            raise AddressRefused(url, error.message) from error
        except aiohttp.ClientConnectorCertificateError as error:
            raise TLSVerificationError(url, f"TLS certificate not trusted: {untrusted_because(error)}") from error
        except aiohttp.ClientSSLError as error:
            raise TLSVerificationError(url, f"TLS error: {error}") from error
        except TimeoutError as error:
            raise DownloadTimeout(url, f"timed out: {quoted(error) or 'no data within the timeout'}") from error
        except aiohttp.ClientPayloadError as error:
            raise DownloadConnectionError(url, f"body ended early: {quoted(error)}") from error
        except aiohttp.ClientHttpProxyError as error:  # the proxy refused the CONNECT of an https URL
            raise HttpStatusError(url, error.status, f"{error.message} (from the proxy)") from error
        except aiohttp.ClientResponseError as error:
            raise DownloadConnectionError(url, f"malformed response: {quoted(error.message)}") from error
        except (aiohttp.ClientError, OSError) as error:
            raise DownloadConnectionError(url, f"connection failed: {quoted(error) or type(error).__name__}") from error

    def _proxy_arguments(self) -> _ProxyArguments:
        settings = self.settings
        if not settings.proxy_url:
            return {}
        # A header, not aiohttp's proxy_auth and BasicAuth, which 3.14 deprecates and 4 removes.
        return {"proxy": settings.proxy_url, "proxy_headers": proxy_headers(settings)}


class _ProxyArguments(TypedDict, total=False):
    """The proxy keywords of every request of a fetch: none without a proxy."""

    proxy: str
    proxy_headers: dict[str, str]


@dataclass(frozen=True)
class _Client:
    """What every request of one fetch shares."""

    session: aiohttp.ClientSession
    proxy: _ProxyArguments
    targets: ProxiedTargets

    async def response(self, chain: Redirects) -> aiohttp.ClientResponse:
        """The response at the end of the request's redirects, each hop checked before it is requested."""
        while True:
            await self.targets.check_async(chain.url)
            headers = _hop_headers(chain, self.proxy)
            response = await self.session.get(chain.url, headers=headers, allow_redirects=False, **self.proxy)
            location = redirect_location(response.status, response.headers.get(hdrs.LOCATION))
            if location is None:
                return response
            response.release()
            chain.follow(location)


def _hop_headers(chain: Redirects, proxy: _ProxyArguments) -> dict[str, str]:
    """The hop's headers, without the remote's basic auth when the hop's URL carries credentials of
    its own (aiohttp sends those, and refuses a request with both), and with the proxy's own headers
    when the proxy forwards this hop as a plain http request: aiohttp sends `proxy_headers` only on
    the CONNECT of an https hop."""
    url = urlsplit(chain.url)
    headers = chain.headers
    if url.username is not None:
        headers = {name: value for name, value in headers.items() if name.lower() != "authorization"}
    if url.scheme == "http" and proxy.get("proxy_headers"):
        headers = {**headers, **proxy["proxy_headers"]}
    return headers


class _PolicyResolver(AbstractResolver):
    """aiohttp's default resolver, keeping only the addresses the remote-address policy allows.

    aiohttp connects to a URL's literal address without asking a resolver: `Redirects` and
    `ProxiedTargets` have refused those by then.
    """

    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy
        self._resolver = aiohttp.DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._resolver.resolve(host, port, family)
        allowed = set(allowed_addresses(self._policy, host, port, [result["host"] for result in results]))
        return [result for result in results if result["host"] in allowed]

    async def close(self) -> None:
        await self._resolver.close()


class _Slots:
    """A semaphore as large as the fetch's concurrency limit is now: an attempt waits while `limit` attempts
    hold a slot, and waiters start as soon as one ends or the limit rises (`ConcurrencyLimit.watch`, called
    on this loop's thread: every call into the limit is made from it)."""

    def __init__(self, concurrency: ConcurrencyLimit) -> None:
        self._concurrency = concurrency
        self._held = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        concurrency.watch(self._wake)

    async def __aenter__(self) -> None:
        while self._held >= self._concurrency.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                self._wake()  # a wake-up it took for a slot goes to the next waiter
                raise
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self._held += 1

    async def __aexit__(self, *exc_info: object) -> None:
        self._held -= 1
        self._wake()

    def _wake(self) -> None:
        """Wake as many waiters as there are free slots; each looks again."""
        free = self._concurrency.limit - self._held
        for waiter in self._waiters:
            if free <= 0:
                return
            if not waiter.done():
                waiter.set_result(None)
                free -= 1


class _Downloads:
    """The downloads in flight, and those that ended, in the order they ended.

    Handing ended ones over costs the same with 20 downloads in flight as with 2, where
    `asyncio.wait(pending)` adds and removes a callback on every pending task at each call: on
    10,000 small files that was a visible share of the loop's time.
    """

    def __init__(self) -> None:
        self.pending: set[asyncio.Task[Outcome]] = set()
        self._ended: deque[asyncio.Task[Outcome]] = deque()
        self._woken = asyncio.Event()

    def start(self, download: Coroutine[Any, Any, Outcome]) -> None:
        task = asyncio.create_task(download)
        task.add_done_callback(self._on_end)
        self.pending.add(task)

    def _on_end(self, task: asyncio.Task[Outcome]) -> None:
        self._ended.append(task)
        self._woken.set()

    async def emit_ended(self, handoff: Handoff) -> None:
        """Wait for at least one download to end and hand every ended one over."""
        while not self._ended:
            self._woken.clear()
            await self._woken.wait()
        while self._ended:
            task = self._ended.popleft()
            self.pending.discard(task)
            outcome = task.result()
            if not handoff.try_emit(outcome):
                await asyncio.to_thread(handoff.emit, outcome)


async def _abandon(pending: set[asyncio.Task[Outcome]]) -> None:
    """Cancel downloads nobody will consume and remove whatever files they finished."""
    for task in pending:
        task.cancel()
    for outcome in await asyncio.gather(*pending, return_exceptions=True):
        if isinstance(outcome, DownloadResult):
            outcome.path.unlink(missing_ok=True)
