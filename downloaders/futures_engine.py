"""The futures engine: a ThreadPoolExecutor of `download_concurrency` threads sharing one urllib3 pool.

urllib3's PoolManager is documented thread-safe and keeps one pool of keep-alive connections per
host, sized to the concurrency: every thread reuses warm connections, and there is one place to
configure TLS, proxy and timeouts. (A requests Session is not documented thread-safe, and one
per thread would keep a separate pool, and separate TLS handshakes, per thread.)

Each pool task is a single attempt. Retries are scheduled by the engine thread after their backoff,
so a thread never sleeps holding a concurrency slot.
"""

from __future__ import annotations

import heapq
import itertools
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from threading import Event
from typing import Iterable, Iterator

import urllib3
from urllib3.exceptions import (
    HTTPError,
    LocationValueError,
    MaxRetryError,
    ResponseError,
    SSLError,
    TimeoutError as Urllib3Timeout,
)

from downloaders.base import BaseDownloader, FetchCancelled, Handoff, check_url
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
from downloaders.retry import DownloadJob, RateLimiter, RetryPolicy, parse_retry_after
from downloaders.settings import DownloaderSettings
from downloaders.streaming import BodyWriter
from downloaders.tls import build_ssl_context
from downloaders.types import DownloadRequest

__all__ = ["FuturesDownloader"]

_NO_RETRIES = urllib3.Retry(total=None, connect=0, read=0, status=0, other=0, redirect=10, raise_on_status=False)


class FuturesDownloader(BaseDownloader):
    """Threads doing blocking reads; the engine thread submits, collects, retries and hands over."""

    name = "futures"

    def _run(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        pool = _pool_manager(self.settings, self.name)
        limiter = RateLimiter(self.settings.rate_limit)
        concurrency = self.settings.download_concurrency
        try:
            with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="futures-download") as executor:
                in_flight: dict[Future[tuple[Path, str, int]], DownloadJob] = {}
                try:
                    self._schedule(iter(requests), temp_dir, handoff, executor, in_flight, pool, limiter)
                finally:
                    _abandon(in_flight)
        finally:
            pool.clear()

    def _schedule(
        self,
        requests: Iterator[DownloadRequest],
        temp_dir: Path,
        handoff: Handoff,
        executor: ThreadPoolExecutor,
        in_flight: dict[Future[tuple[Path, str, int]], DownloadJob],
        pool: urllib3.PoolManager,
        limiter: RateLimiter,
    ) -> None:
        policy = RetryPolicy(self.settings)
        backing_off: list[tuple[float, int, DownloadJob]] = []
        order = itertools.count()
        concurrency = self.settings.download_concurrency
        exhausted = False
        while True:
            if handoff.cancelled.is_set():
                raise FetchCancelled()
            while len(in_flight) < concurrency:
                job, exhausted = _next_job(backing_off, requests, exhausted)
                if job is None:
                    break
                job.attempts += 1
                future = executor.submit(self._attempt, pool, limiter, job.request, temp_dir, handoff.cancelled)
                in_flight[future] = job
            if not in_flight and not backing_off and exhausted:
                return
            done, _ = wait(in_flight, timeout=_until_next(backing_off), return_when=FIRST_COMPLETED)
            for future in done:
                job = in_flight.pop(future)
                error = future.exception()
                if error is None:
                    path, digest, size = future.result()
                    handoff.emit(job.result(path, digest, size))
                    continue
                if not isinstance(error, DownloadError):
                    raise error
                job.mismatches += isinstance(error, VerificationError)
                if policy.should_retry(error, job.attempts, job.mismatches):
                    ready = time.monotonic() + policy.delay(error, job.attempts)
                    heapq.heappush(backing_off, (ready, next(order), job))
                else:
                    handoff.emit(job.failure(error))

    def _attempt(
        self,
        pool: urllib3.PoolManager,
        limiter: RateLimiter,
        request: DownloadRequest,
        temp_dir: Path,
        cancelled: Event,
    ) -> tuple[Path, str, int]:
        url = request.url
        check_url(url)
        time.sleep(limiter.reserve())
        deadline = None if self.settings.total_timeout is None else time.monotonic() + self.settings.total_timeout
        try:
            response = pool.request("GET", url, preload_content=False, decode_content=False, retries=_NO_RETRIES)
        except (MaxRetryError, HTTPError) as error:
            raise _translate(url, error) from error
        try:
            if not 200 <= response.status < 300:
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                raise HttpStatusError(url, response.status, response.reason or "", retry_after)
            with BodyWriter(request, temp_dir) as body:
                for chunk in response.stream(self.settings.chunk_size, decode_content=False):
                    if cancelled.is_set():
                        raise FetchCancelled()
                    if deadline is not None and time.monotonic() > deadline:
                        raise DownloadTimeout(url, f"total_timeout of {self.settings.total_timeout}s ran out")
                    body.write(chunk)
                result = body.path, body.finish(), body.size
        except HTTPError as error:
            response.close()
            raise _translate(url, error) from error
        except BaseException:
            response.close()
            raise
        finally:
            response.release_conn()
        return result


def _pool_manager(settings: DownloaderSettings, engine: str) -> urllib3.PoolManager:
    """One thread-safe pool per fetch, `download_concurrency` keep-alive connections per host."""
    timeout = urllib3.Timeout(connect=settings.shortest_connect_timeout, read=settings.sock_read_timeout)
    headers = request_headers(settings, engine)
    if settings.username:
        headers.update(urllib3.make_headers(basic_auth=f"{settings.username}:{settings.password or ''}"))
    common = {
        "num_pools": 16,
        "maxsize": settings.download_concurrency,
        "headers": headers,
        "timeout": timeout,
        "ssl_context": build_ssl_context(settings),
        "cert_reqs": "CERT_REQUIRED" if settings.tls_validation else "CERT_NONE",
    }
    if settings.proxy_url:
        proxy_headers = None
        if settings.proxy_username:
            proxy_headers = urllib3.make_headers(
                proxy_basic_auth=f"{settings.proxy_username}:{settings.proxy_password or ''}"
            )
        return urllib3.ProxyManager(settings.proxy_url, proxy_headers=proxy_headers, **common)
    return urllib3.PoolManager(**common)


def _next_job(
    backing_off: list[tuple[float, int, DownloadJob]], requests: Iterator[DownloadRequest], exhausted: bool
) -> tuple[DownloadJob | None, bool]:
    """A retry whose backoff is over, else a new request, else None; and whether requests ran out."""
    if backing_off and backing_off[0][0] <= time.monotonic():
        return heapq.heappop(backing_off)[2], exhausted
    if exhausted:
        return None, True
    request = next(requests, None)
    return (None, True) if request is None else (DownloadJob(request), False)


def _until_next(backing_off: list[tuple[float, int, DownloadJob]]) -> float:
    """How long the engine thread may wait for a download before a retry is due (and cancel is checked)."""
    if not backing_off:
        return 0.2
    return max(0.0, min(0.2, backing_off[0][0] - time.monotonic()))


def _abandon(in_flight: dict[Future[tuple[Path, str, int]], DownloadJob]) -> None:
    """Wait for attempts nobody will consume and remove the files they finished."""
    for future in in_flight:
        future.cancel()
    for future in in_flight:
        if not future.cancelled() and future.exception() is None:
            future.result()[0].unlink(missing_ok=True)


def _translate(url: str, error: BaseException) -> DownloadError:
    """urllib3's errors as ours, at one place."""
    if isinstance(error, MaxRetryError):
        if error.reason is None or isinstance(error.reason, ResponseError):
            return DownloadError(url, "too many redirects")
        return _translate(url, error.reason)
    if isinstance(error, SSLError):
        if "CERTIFICATE_VERIFY_FAILED" in str(error) or "certificate verify failed" in str(error):
            return TLSVerificationError(url, f"TLS certificate not trusted: {error}")
        return TLSVerificationError(url, f"TLS error: {error}")
    if isinstance(error, Urllib3Timeout):
        return DownloadTimeout(url, f"timed out: {error}")
    if isinstance(error, LocationValueError):
        return UnsupportedURL(url, f"not a URL we can fetch: {error}")
    return DownloadConnectionError(url, f"connection failed: {error}")
