"""What an engine makes for its concurrency: at most one of anything per file it is given to fetch, so that
a fetch of 3 files at a high concurrency costs what one at concurrency 3 does (issue 32: the futures engine
filled its pool with a slot per download, 5.3 GB in 13 minutes at 2,000,000,000, before the first one)."""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from urllib3.connectionpool import HTTPConnectionPool

import downloaders
from downloaders import Downloader, DownloaderSettings, DownloadRequest, DownloadResult
from downloaders.futures_engine import FuturesDownloader
from tests.downloaders.conftest import BUILT_IN
from tests.servers import serve_app

FILES = {f"file-{n}": bytes([n]) * 100_000 for n in range(3)}
CONCURRENCY = 200
"""Far more downloads in flight than there are files to fetch (and within the bound of the setting)."""


@pytest.fixture(scope="module")
def three_files() -> Iterator[list[DownloadRequest]]:
    """Requests for FILES, served on 127.0.0.1."""

    async def serve(request: web.Request) -> web.Response:
        return web.Response(body=FILES[request.match_info["name"]])

    app = web.Application()
    app.router.add_get("/{name}", serve)
    with serve_app(app) as base:
        yield [DownloadRequest(base + name, name, hashlib.sha256(body).hexdigest(), len(body))
               for name, body in FILES.items()]


def test_the_futures_engine_makes_a_connection_only_for_a_download_it_starts(
    three_files: list[DownloadRequest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its pool holds nothing when it is made (urllib3 puts a placeholder per slot in it, `maxsize` of
    them, which at concurrency 2e9 was the 5.3 GB), makes at most one connection per file, and the
    engine runs at most one thread per file."""
    pools: list[tuple[HTTPConnectionPool, int]] = []
    made = HTTPConnectionPool.__init__

    def recorded(pool: HTTPConnectionPool, *args: Any, **kwargs: Any) -> None:
        made(pool, *args, **kwargs)
        assert pool.pool is not None
        pools.append((pool, pool.pool.qsize()))

    monkeypatch.setattr(HTTPConnectionPool, "__init__", recorded)
    threads = 0

    def count_threads() -> None:
        nonlocal threads
        threads = max(threads, sum(t.name.startswith("futures-download_") for t in threading.enumerate()))

    fetch_all(FuturesDownloader, three_files, tmp_path, count_threads)
    assert [held for _, held in pools] == [0], "one pool, made empty"
    assert pools[0][0].num_connections <= 3
    assert threads <= 3


@pytest.mark.parametrize("engine", BUILT_IN)
def test_closing_a_fetch_cuts_off_the_connects_in_progress(
    engine: str, three_files: list[DownloadRequest], tmp_path: Path
) -> None:
    """A remote that never accepts (its backlog full) holds each connect for `sock_connect_timeout`, 30 s
    by default; a consumer that stops (a sync's SIGTERM) waits for none of them."""
    with socket.create_server(("127.0.0.1", 0), backlog=0) as deaf:
        url = f"http://127.0.0.1:{deaf.getsockname()[1]}/never"
        never = [DownloadRequest(f"{url}/{n}", f"never-{n}") for n in range(20)]
        fetch = downloaders.load(engine)(DownloaderSettings(download_concurrency=21)).fetch(
            [three_files[0], *never], tmp_path
        )
        first = next(fetch)
        assert isinstance(first, DownloadResult)
        time.sleep(0.5)  # every other download is connecting by now
        started = time.monotonic()
        fetch.close()
        assert time.monotonic() - started < 2.0
    assert list(tmp_path.iterdir()) == [first.path], "no other file left behind"


def fetch_all(
    engine: type[Downloader], requests: list[DownloadRequest], temp_dir: Path, each: Callable[[], None] = lambda: None
) -> None:
    """Fetch `requests` with `engine` at CONCURRENCY, calling `each` as each outcome arrives; every one a result."""
    outcomes = []
    for outcome in engine(DownloaderSettings(download_concurrency=CONCURRENCY)).fetch(requests, temp_dir):
        each()
        outcomes.append(outcome)
    assert len(outcomes) == len(requests) and all(isinstance(outcome, DownloadResult) for outcome in outcomes)
