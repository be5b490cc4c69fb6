"""The suite's own servers on 127.0.0.1, for the rules that are seen on the wire.

The fixture server serves files and faults; these tell what each request carried (headers,
credentials, the proxy it came through, the client certificate it showed), when it came, and where
a redirect sent it, and some never answer a connect at all. Each `Origin` runs in a thread of the
test's process and answers each path as the test scripts it; it doubles as a forward proxy (a
request in absolute form is one that came through a proxy), answering for the target itself, so no
request ever leaves the machine.
"""

from __future__ import annotations

import asyncio
import base64
import queue
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from conformance import defaults

__all__ = [
    "Answer",
    "Seen",
    "Origin",
    "Certificates",
    "basic",
    "body",
    "redirect",
    "status",
    "trickle",
    "challenge",
    "serving",
    "in_a_thread",
    "make_certificates",
    "server_context",
    "unanswered_connects",
]

Answer = Callable[[web.Request], Awaitable[web.StreamResponse]]
"""How an Origin answers one request."""
Stop = Callable[[], Coroutine[Any, Any, None]]
"""What stops a server on its own loop (`in_a_thread` runs it there from the caller's thread)."""

@dataclass(frozen=True)
class Seen:
    """One request as the server saw it."""

    path: str
    """Path and query."""
    target: str
    """The request line's target: the path, or the whole URL when the request came through a proxy."""
    headers: Mapping[str, str]
    at: float
    """time.monotonic() when it arrived."""

    @property
    def proxied(self) -> bool:
        return "://" in self.target


@dataclass
class Origin:
    """A server answering each path with the answers a test gave it, in turn (the last one for every later
    request; 404 for a path it was given none), and recording every request."""

    url: str = ""
    """Its base URL, `http(s)://127.0.0.1:PORT/`, once `serving` started it."""
    seen: list[Seen] = field(default_factory=list)
    _answers: dict[str, list[Answer]] = field(default_factory=dict)

    def answer(self, path: str, *answers: Answer) -> str:
        """Answer requests for `path` (starting with /) with `answers` in turn; the path's URL."""
        self._answers[path] = list(answers)
        return self.url + path.lstrip("/")

    def requests(self, path: str) -> list[Seen]:
        """The requests for `path`, in the order they came."""
        return [seen for seen in self.seen if seen.path == path]

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(Seen(request.path_qs, request.raw_path, request.headers, time.monotonic()))
        answers = self._answers.get(request.path_qs)
        if not answers:
            return web.Response(status=404)
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        return await answer(request)


def body(data: bytes, headers: Mapping[str, str] | None = None) -> Answer:
    """200 with these bytes (and these headers, as they are: a Content-Encoding is not applied)."""

    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(body=data, headers=headers)

    return answer


def redirect(location: str, code: int = 302, headers: Mapping[str, str] | None = None) -> Answer:
    return status(code, {"Location": location, **(headers or {})})


def status(code: int, headers: Mapping[str, str] | None = None) -> Answer:
    """An answer with no body but its status and headers (a redirect, a 429 with Retry-After)."""

    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(status=code, headers=headers)

    return answer


def trickle(data: bytes, step: int, every: float) -> Answer:
    """200 with a Content-Length for all of `data`, sent `step` bytes every `every` seconds: no read waits
    long, yet the body takes len(data) / step x every seconds."""

    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Length": str(len(data))})
        await response.prepare(request)
        try:
            for start in range(0, len(data), step):
                await response.write(data[start : start + step])
                await asyncio.sleep(every)
            await response.write_eof()
        except ConnectionError:
            pass  # the client gave up, as it should have
        return response

    return answer


def basic(username: str, password: str) -> str:
    """The value of a basic Authorization (or Proxy-Authorization) header."""
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def challenge(header: str, expected: str, then: Answer) -> Answer:
    """`then` for a request whose `header` is `expected`; else 401 (407 for Proxy-Authorization) with a
    challenge, which a client that sends credentials only when asked answers with them."""
    proxy = header.lower() == "proxy-authorization"
    code, asking = (407, "Proxy-Authenticate") if proxy else (401, "WWW-Authenticate")

    async def answer(request: web.Request) -> web.StreamResponse:
        if request.headers.get(header) == expected:
            return await then(request)
        return web.Response(status=code, headers={asking: 'Basic realm="conformance"'})

    return answer


@contextmanager
def serving(origin: Origin, context: ssl.SSLContext | None = None) -> Iterator[Origin]:
    """Serve `origin` on a free port of 127.0.0.1 (https with `context`) until the block ends."""
    runner = web.AppRunner(origin.app(), access_log=None, shutdown_timeout=0.2)

    async def start() -> tuple[int, Stop]:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
        return int(runner.addresses[0][1]), runner.cleanup

    with in_a_thread(start, "conformance-origin") as port:
        origin.url = f"{'https' if context else 'http'}://127.0.0.1:{port}/"
        yield origin


@contextmanager
def in_a_thread(start: Callable[[], Awaitable[tuple[int, Stop]]], name: str = "server") -> Iterator[int]:
    """Run a server's own event loop in a daemon thread until the block ends; the port it listens on.

    `start` sets the server up and returns its port and a coroutine function that stops it. An error in
    `start` is raised here, in the caller's thread. Its own loop keeps the server off the loop of an
    asyncio downloader under test (and the test suite's servers off it too: tests/servers.py).
    """
    loop = asyncio.new_event_loop()
    started: queue.Queue[tuple[int, Stop] | BaseException] = queue.Queue()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            started.put(loop.run_until_complete(start()))
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            started.put(error)
            return
        loop.run_forever()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    outcome = started.get(timeout=defaults.WIRE_START_SECONDS)
    if isinstance(outcome, BaseException):
        raise outcome
    port, stop = outcome
    try:
        yield port
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(defaults.WIRE_START_SECONDS)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(defaults.WIRE_START_SECONDS)
        loop.close()


@dataclass(frozen=True)
class Certificates:
    """A server certificate for 127.0.0.1 and a client certificate, each signed by itself, with their keys."""

    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_certificates(folder: Path) -> Certificates:
    """Fresh certificates in `folder`, made with the openssl command line (EC keys: a few ms each)."""
    made = [_self_signed(folder, "server", "subjectAltName=IP:127.0.0.1"), _self_signed(folder, "client", None)]
    (server_cert, server_key), (client_cert, client_key) = made
    return Certificates(server_cert, server_key, client_cert, client_key)


def _self_signed(folder: Path, name: str, extension: str | None) -> tuple[Path, Path]:
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    command = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    command += ["-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN=conformance-{name}"]
    command += ["-addext", extension] if extension else []
    try:
        subprocess.run(command, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"the TLS checks need the openssl command line to make certificates: {error}")
    return cert, key


def server_context(certificates: Certificates, require_client: bool = False) -> ssl.SSLContext:
    """The server's TLS: its certificate, and when `require_client`, no client without the client certificate."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates.server_cert, certificates.server_key)
    if require_client:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(certificates.client_cert)
    return context


@contextmanager
def unanswered_connects(hold: float) -> Iterator[str]:
    """The URL of a port whose TCP connects never complete: it listens with its accept queue full, so the
    kernel drops every further SYN. After `hold` seconds it closes, and a client with no connect timeout
    gets a refusal at its next SYN, so even a broken one ends. Skips the check where the kernel answers
    such SYNs anyway (as Linux does not)."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = listener.getsockname()[1]
    queued = [socket.create_connection(("127.0.0.1", port), timeout=1.0)]
    probe = socket.socket()
    probe.settimeout(0.2)
    try:
        probe.connect(("127.0.0.1", port))
    except TimeoutError:
        pass
    else:
        pytest.skip("this machine completes connects to a full accept queue: a connect timeout cannot be shown")
    finally:
        probe.close()
    closing = threading.Timer(hold, listener.close)
    closing.start()
    try:
        yield f"http://127.0.0.1:{port}/never"
    finally:
        closing.cancel()
        listener.close()
        for connection in queued:
            connection.close()
