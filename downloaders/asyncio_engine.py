"""The asyncio engine: aiohttp, one session per fetch, a semaphore of `download_concurrency`."""

from __future__ import annotations

import asyncio
import base64
import time
from collections import deque
from pathlib import Path
from typing import Any, Coroutine, Iterable
from urllib.parse import urlsplit

import aiohttp
from aiohttp import hdrs

from downloaders.base import BaseDownloader, Handoff, check_url
from downloaders.errors import (
    DownloadConnectionError,
    DownloadError,
    DownloadTimeout,
    HttpStatusError,
    TLSVerificationError,
    UnsupportedURL,
    VerificationError,
)
from downloaders.headers import request_headers
from downloaders.retry import RateLimiter, RetryPolicy, parse_retry_after
from downloaders.offload import HashingThread
from downloaders.tls import build_ssl_context, trusts_system_defaults
from downloaders.types import DownloadFailure, DownloadRequest, DownloadResult, Outcome

__all__ = ["AsyncioDownloader"]

_BODY = tuple[Path, str, int]


class AsyncioDownloader(BaseDownloader):
    """Coroutines on one event loop in the engine thread; large bodies hashed in a HashingThread.

    At most `download_concurrency` requests hold a connection; twice as many tasks exist at once
    (the others are backing off or waiting for a slot), so memory stays flat for any manifest.
    """

    name = "asyncio"

    def _run(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        asyncio.run(self._main(requests, temp_dir, handoff))

    async def _main(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        main = asyncio.current_task()
        assert main is not None
        handoff.cancel_on_close(main)
        policy, limiter = RetryPolicy(self.settings), RateLimiter(self.settings.rate_limit)
        slots = asyncio.Semaphore(self.settings.download_concurrency)
        window = 2 * self.settings.download_concurrency
        downloads = _Downloads()
        hashing = HashingThread(asyncio.get_running_loop())
        try:
            async with self._session() as session:
                try:
                    for request in requests:
                        if len(downloads.pending) >= window:
                            await downloads.emit_ended(handoff)
                        downloads.start(self._download(session, slots, policy, limiter, hashing, request, temp_dir))
                    while downloads.pending:
                        await downloads.emit_ended(handoff)
                finally:
                    await _abandon(downloads.pending)
        finally:
            hashing.close()

    def _session(self) -> aiohttp.ClientSession:
        settings = self.settings
        ssl = True if trusts_system_defaults(settings) else build_ssl_context(settings)  # aiohttp's is made at import
        connector = aiohttp.TCPConnector(limit=settings.download_concurrency, ssl=ssl)
        timeout = aiohttp.ClientTimeout(
            total=settings.total_timeout,
            connect=settings.connect_timeout,
            sock_connect=settings.sock_connect_timeout,
            sock_read=settings.sock_read_timeout,
        )
        return aiohttp.ClientSession(
            connector=connector,
            timeout=timeout,
            headers=request_headers(settings, self.name),
            auto_decompress=False,
            trust_env=False,
        )

    async def _download(
        self,
        session: aiohttp.ClientSession,
        slots: asyncio.Semaphore,
        policy: RetryPolicy,
        limiter: RateLimiter,
        hashing: HashingThread,
        request: DownloadRequest,
        temp_dir: Path,
    ) -> Outcome:
        started, attempts, mismatches = time.monotonic(), 0, 0
        while True:
            attempts += 1
            try:
                check_url(request.url)
                if delay := limiter.reserve():
                    await asyncio.sleep(delay)
                async with slots:
                    path, digest, size = await self._attempt(session, hashing, request, temp_dir)
                return DownloadResult(request, path, digest, size, started, time.monotonic(), attempts)
            except DownloadError as error:
                mismatches += isinstance(error, VerificationError)
                if not policy.should_retry(error, attempts, mismatches):
                    return DownloadFailure(request, error, attempts)
                await asyncio.sleep(policy.delay(error, attempts))

    async def _attempt(
        self, session: aiohttp.ClientSession, hashing: HashingThread, request: DownloadRequest, temp_dir: Path
    ) -> _BODY:
        url = request.url
        try:
            async with session.get(url, headers=self._authorization(url), **self._proxy_arguments()) as response:
                if not 200 <= response.status < 300:
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
                    raise HttpStatusError(url, response.status, response.reason or "", retry_after)
                with hashing.body(request, temp_dir) as body:
                    async for chunk in response.content.iter_chunked(self.settings.chunk_size):
                        await body.write(chunk)
                    return body.path, await body.finish(), body.size
        except aiohttp.ClientConnectorCertificateError as error:
            raise TLSVerificationError(url, f"TLS certificate not trusted: {error.certificate_error}") from error
        except aiohttp.ClientSSLError as error:
            raise TLSVerificationError(url, f"TLS error: {error}") from error
        except asyncio.TimeoutError as error:
            raise DownloadTimeout(url, f"timed out: {error or 'no data within the timeout'}") from error
        except aiohttp.ClientPayloadError as error:
            raise DownloadConnectionError(url, f"body ended early: {error}") from error
        except aiohttp.TooManyRedirects as error:
            raise DownloadError(url, "too many redirects") from error
        except aiohttp.RedirectClientError as error:
            raise UnsupportedURL(url, f"redirected to {error}: only http and https URLs are fetched") from error
        except aiohttp.ClientResponseError as error:
            raise DownloadConnectionError(url, f"malformed response: {error.message}") from error
        except (aiohttp.ClientError, OSError) as error:
            raise DownloadConnectionError(url, f"connection failed: {error or type(error).__name__}") from error

    def _authorization(self, url: str) -> dict[str, str] | None:
        """The remote's basic auth as a request header, unless the URL carries credentials of its own.

        Not as aiohttp's `auth`: aiohttp drops the header on a redirect to another origin, but
        applies a session's auth again to wherever the redirect leads.
        """
        settings = self.settings
        if not settings.username or urlsplit(url).username is not None:
            return None
        credentials = f"{settings.username}:{settings.password or ''}".encode()
        return {hdrs.AUTHORIZATION: "Basic " + base64.b64encode(credentials).decode("ascii")}

    def _proxy_arguments(self) -> dict[str, object]:
        settings = self.settings
        if not settings.proxy_url:
            return {}
        auth = None
        if settings.proxy_username:
            auth = aiohttp.BasicAuth(settings.proxy_username, settings.proxy_password or "")
        return {"proxy": settings.proxy_url, "proxy_auth": auth}


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
