"""Small servers of the tests' own on 127.0.0.1: aiohttp apps (hostile remotes, the fixture app behind TLS)
and raw TCP handlers (responses no HTTP server library would send), each in a thread with its own event
loop (conformance.wire's in_a_thread, which the conformance suite's own servers use).
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from aiohttp import web

from conformance.wire import in_a_thread

__all__ = ["serve_app", "serve_raw", "self_signed_certificate", "requiring_password"]

RawHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextmanager
def serve_app(app: web.Application, ssl_context: ssl.SSLContext | None = None) -> Iterator[str]:
    """Serve `app` on a free port; the base URL (`http://127.0.0.1:PORT/`, https with `ssl_context`)."""

    async def start() -> tuple[int, Callable[[], Awaitable[None]]]:
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
        await site.start()
        return runner.addresses[0][1], runner.cleanup

    scheme = "https" if ssl_context else "http"
    with in_a_thread(start, "test-server") as port:
        yield f"{scheme}://127.0.0.1:{port}/"


@contextmanager
def serve_raw(handler: RawHandler) -> Iterator[str]:
    """Serve every connection with `handler(reader, writer)`; the base URL."""

    async def start() -> tuple[int, Callable[[], Awaitable[None]]]:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)

        async def stop() -> None:
            server.close()

        return server.sockets[0].getsockname()[1], stop

    with in_a_thread(start, "test-server") as port:
        yield f"http://127.0.0.1:{port}/"


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by itself, and its key, made with the openssl command line."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def requiring_password(app: web.Application, user: str, password: str) -> web.Application:
    """`app` behind HTTP basic auth as `user`: anything else gets 401, as an operator's remote answers."""
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.headers.get("Authorization") != expected:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="repo"'})
        return await handler(request)

    app.middlewares.append(check)
    return app
