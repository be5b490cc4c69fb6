"""The futures engine: a ThreadPoolExecutor of as many threads as the concurrency's bound, one urllib3 pool.

urllib3's PoolManager is documented thread-safe and keeps one pool of keep-alive connections per
host, sized to the concurrency: every thread reuses warm connections, and there is one place to
configure TLS, proxy and timeouts. (A requests Session is not documented thread-safe, and one
per thread would keep a separate pool, and separate TLS handshakes, per thread.)

Each pool task is a single attempt. Retries are scheduled by the engine thread after their backoff,
so a thread never sleeps holding a concurrency slot.

Redirects are followed here (`downloaders.redirects`), not by urllib3, and the pools' connections
connect only to the addresses the remote-address policy allows (`_CheckedHTTPConnection`); through a
proxy, the targets the proxy will connect to are checked too (`_CheckedProxyManager`).

A stop (the consumer closing the iterator: a sync's SIGTERM) shuts down the sockets of the fetch's
connections (`_Connections`), so that no thread waits out its timeout on a remote that does not answer.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import re
import socket
import ssl
import time
import weakref
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from threading import Event, Lock
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    LocationValueError,
    MaxRetryError,
    NameResolutionError,
    NewConnectionError,
    ProxyError,
    SSLError,
    TimeoutError as Urllib3Timeout,
)
from urllib3.util.connection import allowed_gai_family

from downloaders.addresses import AddressPolicy
from downloaders.base import BaseDownloader, FetchCancelled, Handoff
from downloaders.connecting import ProxiedTargets, allowed_addresses
from downloaders.deadlines import deadline_seconds, deadline_timeout
from downloaders.errors import (
    AddressRefused,
    DownloadConnectionError,
    DownloadError,
    DownloadTimeout,
    HttpStatusError,
    TLSVerificationError,
    UnsupportedURL,
    VerificationError,
    quoted,
)
from downloaders.headers import first_hop_headers, proxy_headers
from downloaders.redirects import Redirects, redirect_location
from downloaders.retry import DownloadJob, RateLimiter, RetryPolicy, parse_retry_after
from downloaders.settings import DownloaderSettings
from downloaders.streaming import BodyWriter
from downloaders.tls import build_ssl_context, untrusted_because
from downloaders.types import DownloadRequest, DownloadResult

__all__ = ["FuturesDownloader"]

_NO_RETRIES = urllib3.Retry(total=None, connect=0, read=0, status=0, other=0, redirect=0, raise_on_status=False)
"""Retries and redirects are the engine's (RetryPolicy, Redirects), never urllib3's."""


class FuturesDownloader(BaseDownloader):
    """Threads doing blocking reads; the engine thread submits, collects, retries and hands over."""

    name = "futures"
    adapts_concurrency = True

    def __init__(self, settings: DownloaderSettings) -> None:
        super().__init__(settings)
        self._ssl = build_ssl_context(settings)  # a bad certificate fails here, not in a fetch

    def _run(self, requests: Iterable[DownloadRequest], temp_dir: Path, handoff: Handoff) -> None:
        connections = _Connections()
        handoff.on_cancel(connections.cut_off)
        pool = _pool_manager(self.settings, self.name, self._ssl, connections, self.concurrency.bound)
        limiter = RateLimiter(self.settings.rate_limit)
        threads = self.concurrency.bound
        try:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="futures-download") as executor:
                in_flight: dict[Future[DownloadResult], DownloadJob] = {}
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
        in_flight: dict[Future[DownloadResult], DownloadJob],
        pool: urllib3.PoolManager,
        limiter: RateLimiter,
    ) -> None:
        policy = RetryPolicy(self.settings)
        backing_off: list[tuple[float, int, DownloadJob]] = []
        order = itertools.count()
        exhausted = False
        while True:
            if handoff.cancelled.is_set():
                raise FetchCancelled()
            while len(in_flight) < self.concurrency.limit:
                job, exhausted = _next_job(backing_off, requests, exhausted)
                if job is None:
                    break
                job.attempts += 1
                future = executor.submit(self._attempt, pool, limiter, job, temp_dir, handoff.cancelled)
                in_flight[future] = job
            if not in_flight and not backing_off and exhausted:
                return
            done, _ = wait(in_flight, timeout=_until_next(backing_off), return_when=FIRST_COMPLETED)
            for future in done:
                job = in_flight.pop(future)
                error = future.exception()
                if error is None:
                    handoff.emit(future.result())
                    continue
                if not isinstance(error, DownloadError):
                    raise error
                job.mismatches += isinstance(error, VerificationError)
                if policy.should_retry(error, job.attempts, job.mismatches):
                    ready = time.monotonic() + job.back_off(policy.delay(error, job.attempts))
                    heapq.heappush(backing_off, (ready, next(order), job))
                else:
                    handoff.emit(job.failure(error))

    def _attempt(
        self,
        pool: urllib3.PoolManager,
        limiter: RateLimiter,
        job: DownloadJob,
        temp_dir: Path,
        cancelled: Event,
    ) -> DownloadResult:
        """One attempt, in a pool thread, and its result once verified. The thread holds its slot while
        it waits for the rate limit, which `job` clocks as queue time, as the other engines' waits for it are."""
        chain = Redirects(job.request.url, pool.headers, self.settings)
        if cancelled.wait(limiter.reserve()):
            raise FetchCancelled()
        with job.holding(), self.concurrency.attempt():
            body = self._get(pool, job.request, chain, temp_dir, cancelled)
        return job.result(*body)

    def _get(
        self, pool: urllib3.PoolManager, request: DownloadRequest, chain: Redirects, temp_dir: Path, cancelled: Event
    ) -> tuple[Path, str, int]:
        """The response to the request's last hop, its body streamed into a verified file within the deadline."""
        url = request.url
        seconds = deadline_seconds(request, self.settings)
        deadline = None if seconds is None else time.monotonic() + seconds
        try:
            response = _response(pool, chain)
        except (MaxRetryError, HTTPError) as error:
            raise _translate(url, error) from error
        except AddressRefused as error:  # a refusal when connecting names the host, not the URL
            raise AddressRefused(url, error.message) from error
        try:
            if not 200 <= response.status < 300:
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                raise HttpStatusError(url, response.status, response.reason or "", retry_after)
            with BodyWriter(request, temp_dir) as body:
                for chunk in _chunks(response, self.settings, deadline, request):
                    if cancelled.is_set():
                        raise FetchCancelled()
                    body.write(chunk)
                    self.concurrency.transferred(len(chunk))
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


def _chunks(
    response: urllib3.BaseHTTPResponse, settings: DownloaderSettings, deadline: float | None, request: DownloadRequest
) -> Iterator[bytes]:
    """The body as it arrives, never past `deadline` (when the attempt's `deadline_seconds` run out).

    Each read returns what the socket has (read1), at most a chunk, and waits no longer than what is
    left of the deadline: a server that trickles a byte a second is cut off on time, where reading
    whole chunks would only look at the clock every 256 kB.
    """
    sock = getattr(response.connection, "sock", None)
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise deadline_timeout(request, settings)
            if sock is not None:
                _read_within(sock, request, left if settings.sock_read_timeout is None else
                             min(left, settings.sock_read_timeout))
        try:
            chunk = response.read1(settings.chunk_size, decode_content=False)
        except Urllib3Timeout as error:
            if deadline is not None and time.monotonic() >= deadline:
                raise deadline_timeout(request, settings) from error
            raise
        if not chunk:
            return
        yield chunk


def _read_within(sock: socket.socket, request: DownloadRequest, seconds: float) -> None:
    """Bound the socket's next read to `seconds`. A socket the server closed under a keep-alive connection
    (a remote refusing requests, closing each refusal's connection) has no descriptor left: that is the
    connection failing, retried as any other, not an OSError out of the fetch."""
    try:
        sock.settimeout(seconds)
    except OSError as error:
        raise DownloadConnectionError(request.url, f"connection closed: {quoted(error)}") from error


def _response(pool: urllib3.PoolManager, chain: Redirects) -> urllib3.BaseHTTPResponse:
    """The response at the end of the request's redirects, each hop checked before it is requested."""
    while True:
        response = pool.request(
            "GET",
            chain.url,
            headers=chain.headers,
            preload_content=False,
            decode_content=False,
            retries=_NO_RETRIES,
            redirect=False,
        )
        location = redirect_location(response.status, response.headers.get("Location"))
        if location is None:
            return response
        response.close()  # not drained: a redirect's body may never end
        response.release_conn()
        chain.follow(location)


def _pool_manager(
    settings: DownloaderSettings, engine: str, ssl_context: ssl.SSLContext, connections: _Connections, bound: int
) -> urllib3.PoolManager:
    """One thread-safe pool per fetch, up to `bound` (the concurrency's) keep-alive connections per host, each
    made when a request finds none idle (`_NoSlotsUpFront`).

    Its `headers` are a first hop's, which `Redirects` starts from; each request passes its hop's own.
    """
    timeout = urllib3.Timeout(connect=settings.shortest_connect_timeout, read=settings.sock_read_timeout)
    headers = first_hop_headers(settings, engine)
    common = {
        "num_pools": 16,
        "maxsize": bound,
        "headers": headers,
        "timeout": timeout,
        "ssl_context": ssl_context,
        "cert_reqs": "CERT_REQUIRED" if settings.tls_validation else "CERT_NONE",
    }
    policy = settings.address_policy
    if settings.proxy_url:
        targets = ProxiedTargets(settings)
        return _CheckedProxyManager(
            settings.proxy_url, proxy_headers=proxy_headers(settings), targets=targets, address_policy=policy,
            connections=connections, **common,
        )
    return _CheckedPoolManager(address_policy=policy, connections=connections, **common)


class _Connections:
    """The connections of one fetch's pools, so that a stop cuts off what their threads wait on.

    A pool thread blocks in its socket while it connects, waits for the response or reads the body, each
    for up to its timeout (a minute by default), and the engine waits for its threads before the fetch
    ends: on a remote that does not answer, a SIGTERM of a sync at concurrency 256 took 60 s. `cut_off`
    shuts every socket down, which wakes a thread blocked on it at once with an error (a connect in
    progress too); a connection that would connect after that is refused (FetchCancelled).
    """

    def __init__(self) -> None:
        self._open: weakref.WeakSet[_CheckedHTTPConnection] = weakref.WeakSet()
        self._lock = Lock()
        self._cut_off = False

    def watch(self, connection: _CheckedHTTPConnection) -> None:
        """Called by a connection with its socket made, before it connects."""
        with self._lock:
            if self._cut_off:
                raise FetchCancelled()
            self._open.add(connection)

    def cut_off(self) -> None:
        """From the consumer's thread, when it stops."""
        with self._lock:
            self._cut_off = True
            connections = list(self._open)
        for connection in connections:
            connection.cut_off()


class _CheckedHTTPConnection(HTTPConnection):
    """urllib3's connection, connecting only to the addresses of its host (the proxy, through one) that the
    remote-address policy allows. TLS is untouched: SNI and the certificate's check use the host's name."""

    def __init__(self, *args: Any, address_policy: AddressPolicy, connections: _Connections, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._address_policy = address_policy
        self._connections = connections
        self._socket: socket.socket | None = None  # from before its connect (TLS then wraps it in `sock`)

    def cut_off(self) -> None:
        """Shut its socket down, from another thread: one blocked on it wakes with an error. The plain
        socket's shutdown, even of a TLS one: SSLSocket's would drop the TLS state under the thread reading."""
        for sock in (self._socket, self.sock):
            if sock is not None:
                with contextlib.suppress(OSError):  # closed meanwhile, or never connected
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def _new_conn(self) -> socket.socket:
        """urllib3's, with the lookup done here so that every address is checked before it is connected to;
        AddressRefused (not an OSError, so urllib3 passes it on untouched) when none is allowed."""
        try:
            return self._connect_to_an_allowed_address()
        except socket.gaierror as error:
            raise NameResolutionError(self.host, self, error) from error
        except TimeoutError as error:
            message = f"Connection to {self.host} timed out. (connect timeout={self.timeout})"
            raise ConnectTimeoutError(self, message) from error
        except OSError as error:
            raise NewConnectionError(self, f"Failed to establish a new connection: {error}") from error

    def _connect_to_an_allowed_address(self) -> socket.socket:
        name = self._dns_host.strip("[]")
        infos = socket.getaddrinfo(name, self.port, allowed_gai_family(), socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        failure = OSError(f"{name} resolved to no address")
        for address in allowed_addresses(self._address_policy, self.host, self.port, addresses):
            try:
                return self._connect(address)
            except OSError as error:
                failure = error
        raise failure

    def _connect(self, address: str) -> socket.socket:
        """urllib3's create_connection to one address, its socket watched (`_Connections`) before it connects."""
        sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
        try:
            for option in self.socket_options or ():
                sock.setsockopt(*option)
            sock.settimeout(self.timeout)  # the connect timeout (`_pool_manager` always gives one, or None)
            if self.source_address:
                sock.bind(self.source_address)
            self._socket = sock
            self._connections.watch(self)
            sock.connect((address, self.port))
        except BaseException:
            sock.close()
            raise
        return sock


class _CheckedHTTPSConnection(_CheckedHTTPConnection, HTTPSConnection):
    """The HTTPS one, likewise."""


class _NoSlotsUpFront(HTTPConnectionPool):
    """A pool that keeps up to `maxsize` idle connections, as urllib3's, without putting a placeholder per
    connection in its queue when it is made (urllib3 does, so that a blocking pool waits for a free slot).

    The pools here never block (`block` is False: a request finds an idle connection or makes one), and the
    engine has at most `concurrency.limit` requests in flight, so a pool holds no more connections than
    the most requests it saw at once, at most one per file to fetch: 3 files at concurrency 256 make 3.
    """

    def __init__(self, host: str, port: int | None = None, *, maxsize: int = 1, **kwargs: Any) -> None:
        super().__init__(host, port, maxsize=0, **kwargs)  # an unbounded queue, and no placeholder in it
        assert self.pool is not None
        self.pool.maxsize = maxsize  # the bound of idle connections kept; _put_conn closes one past it


class _CheckedHTTPPool(_NoSlotsUpFront):
    ConnectionCls = _CheckedHTTPConnection


class _CheckedHTTPSPool(_NoSlotsUpFront, HTTPSConnectionPool):
    ConnectionCls = _CheckedHTTPSConnection


class _CheckedPoolManager(urllib3.PoolManager):
    """A PoolManager whose pools' connections check their addresses and can be cut off (`address_policy` and
    `connections` go to each one)."""

    def __init__(self, *args: Any, address_policy: AddressPolicy, connections: _Connections, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pool_classes_by_scheme = {"http": _CheckedHTTPPool, "https": _CheckedHTTPSPool}
        self._address_policy = address_policy
        self._connections = connections

    def _new_pool(
        self, scheme: str, host: str, port: int, request_context: dict[str, Any] | None = None
    ) -> HTTPConnectionPool:
        context = dict(self.connection_pool_kw if request_context is None else request_context)
        extra = {"address_policy": self._address_policy, "connections": self._connections}
        return super()._new_pool(scheme, host, port, {**context, **extra})


class _CheckedProxyManager(_CheckedPoolManager, urllib3.ProxyManager):
    """The ProxyManager likewise for the connections to the proxy; and since the proxy connects to the
    targets, each URL is refused before its request when `ProxiedTargets` refuses it."""

    def __init__(self, *args: Any, targets: ProxiedTargets, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._targets = targets

    # urllib3's own ProxyManager.urlopen has this signature, narrower than RequestMethods.urlopen's (urllib3 ignores
    # [override] there too): mypy checks this one against both.
    def urlopen(  # type: ignore[override]
        self, method: str, url: str, redirect: bool = True, **kw: Any
    ) -> urllib3.BaseHTTPResponse:
        self._targets.check(url)
        return super().urlopen(method, url, redirect, **kw)


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


def _abandon(in_flight: dict[Future[DownloadResult], DownloadJob]) -> None:
    """Wait for attempts nobody will consume and remove the files they finished."""
    for future in in_flight:
        future.cancel()
    for future in in_flight:
        if not future.cancelled() and future.exception() is None:
            future.result().path.unlink(missing_ok=True)


_TUNNEL_REFUSED = re.compile(r"Tunnel connection failed: (\d{3}) ?([^'\")]*)")
"""http.client's words for a CONNECT that the proxy answered with a status, which urllib3 passes on only
as text."""


def _translate(url: str, error: BaseException) -> DownloadError:
    """urllib3's errors as ours, at one place."""
    if isinstance(error, MaxRetryError) and error.reason is not None:
        return _translate(url, error.reason)
    if isinstance(error, SSLError):
        if "CERTIFICATE_VERIFY_FAILED" in str(error) or "certificate verify failed" in str(error):
            return TLSVerificationError(url, f"TLS certificate not trusted: {untrusted_because(error)}")
        return TLSVerificationError(url, f"TLS error: {error}")
    if isinstance(error, Urllib3Timeout) and not isinstance(error, NewConnectionError):  # urllib3 2 made it one
        return DownloadTimeout(url, f"timed out: {error}")
    if isinstance(error, LocationValueError):
        return UnsupportedURL(url, f"not a URL we can fetch: {error}")
    refused = _TUNNEL_REFUSED.search(str(error)) if isinstance(error, ProxyError) else None
    if refused:
        return HttpStatusError(url, int(refused[1]), f"{refused[2]} (from the proxy)".strip())
    return DownloadConnectionError(url, f"connection failed: {quoted(error)}")
