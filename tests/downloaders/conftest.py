"""Downloader tests beyond the contract (which is conformance/): every installed downloader on 127.0.0.1."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from multidict import CIMultiDictProxy

import downloaders
from conformance.checks import Subject
from downloaders import DownloaderSettings, DownloadFailure, DownloadRequest, Outcome
from fixtures.generate import generate_tree
from tests.servers import serve_app

BUILT_IN = ("asyncio", "futures")

FAKE_NAMES = {
    "metadata.test": ["169.254.169.254"],
    "mixed.test": ["169.254.169.254", "127.0.0.1"],
    "nowhere.test": [],
}
"""Names the `only_loopback` fixture resolves (an empty list: it does not resolve), without asking a DNS server."""


@pytest.fixture(params=sorted(downloaders.available()))
def subject(request: pytest.FixtureRequest) -> Subject:
    """Each installed downloader in turn."""
    return Subject(request.param, downloaders.load(request.param))


@pytest.fixture(params=BUILT_IN)
def engine(request: pytest.FixtureRequest) -> str:
    """Each built-in engine: those that enforce the remote-address policy and follow redirects themselves."""
    return request.param


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small file-example tree (about 2 MB for the 100 set, 10,000 small files)."""
    root = tmp_path_factory.mktemp("tree")
    generate_tree(root, scale=0.005)
    return root


@pytest.fixture
def only_loopback(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every connection the test process attempts to an address that is not loopback, refused before it
    leaves the machine (a broken engine must fail the test, never reach 169.254.169.254); and
    `FAKE_NAMES` resolved as they say. The list of those attempts: a test asserts it stays empty."""
    attempts: list[str] = []
    connect, getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        host = str(address[0]) if isinstance(address, tuple) else str(address)
        internet = sock.family in (socket.AF_INET, socket.AF_INET6)
        if internet and not ipaddress.ip_address(host.split("%")[0]).is_loopback:
            attempts.append(host)
            raise ConnectionRefusedError(f"the test refuses a connection to {host}")
        connect(sock, address)

    def fake_getaddrinfo(host: Any, port: Any, family: int = 0, type: int = 0, *args: Any, **kwargs: Any) -> Any:
        if host not in FAKE_NAMES:
            return getaddrinfo(host, port, family, type, *args, **kwargs)
        if family == socket.AF_INET6 or not FAKE_NAMES[host]:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        number = int(port or 0)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, number)) for address in FAKE_NAMES[host]]

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    return attempts


@dataclass
class Recorder:
    """An aiohttp app on 127.0.0.1 that answers each path as told (404 otherwise) and records every request.

    Serves as a forward proxy too: a request for an absolute URL is answered by its path alike.
    """

    answers: dict[str, Callable[[], web.Response]] = field(default_factory=dict)
    requests: list[tuple[str, CIMultiDictProxy[str]]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._answer)
        return app

    def body(self, path: str, body: bytes = b"the body\n") -> None:
        self.answers[path] = lambda: web.Response(body=body)

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        self.answers[path] = lambda: web.Response(status=status, headers={"Location": location})

    def headers(self, path: str) -> list[CIMultiDictProxy[str]]:
        """The headers of each request for `path`, in order."""
        return [headers for seen, headers in self.requests if seen == path]

    async def _answer(self, request: web.Request) -> web.Response:
        self.requests.append((request.path_qs, request.headers))
        answer = self.answers.get(request.path_qs)
        return web.Response(status=404) if answer is None else answer()


@pytest.fixture
def serve() -> Iterator[Callable[..., str]]:
    """Serve an app (or a Recorder) on a free port of 127.0.0.1 until the test ends: `serve(app, ssl_context=None)`
    gives its base URL."""
    with ExitStack() as stack:

        def start(app: web.Application | Recorder, ssl_context: Any = None) -> str:
            return stack.enter_context(serve_app(app.app() if isinstance(app, Recorder) else app, ssl_context))

        yield start


def fetch_one(engine: str, url: str, temp_dir: Path, **settings: Any) -> Outcome:
    """One request through `engine` with these settings (no retries unless given)."""
    settings.setdefault("max_retries", 0)
    downloader = downloaders.load(engine)(DownloaderSettings(**settings))
    with closing(downloader.fetch([DownloadRequest(url, "x")], temp_dir)) as outcomes:
        return next(outcomes)


def failure_of(outcome: Outcome) -> DownloadFailure:
    assert isinstance(outcome, DownloadFailure), f"expected a failure, got {outcome}"
    assert outcome.attempts == 1, f"{outcome.error!r} was tried {outcome.attempts} times"
    return outcome
