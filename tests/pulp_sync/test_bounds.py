"""A sync at the bound of `download_concurrency` ends on SIGTERM within seconds, however many of its downloads
wait on a remote that never answers (issue 32: a futures job at a huge concurrency ignored SIGTERM)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from downloaders import defaults
from pulp_sync.models import Repository, TaskState
from pulp_sync.tasking.tasks import dispatch_sync
from tests.pulp_sync.conftest import ENGINES, manifest_line
from tests.pulp_sync.tasking.test_tasks import Workers, queue, redis, sync_source, workers  # noqa: F401 - fixtures
from tests.pulp_sync.test_crash_safety import PULP_SYNC, workspace_of
from tests.servers import serve_raw

FILES = 2 * defaults.MAX_DOWNLOAD_CONCURRENCY
STOPPED_WITHIN = 5.0
"""Seconds from SIGTERM to the end of the process: the downloads in flight are cut off, not waited for (each
waits up to `sock_read_timeout`, a minute by default, for a response that never comes)."""


class _Stalling:
    """A remote whose manifest lists FILES files and who never answers a request for one: each such request
    holds its connection (and one of the sync's slots) until the client goes away."""

    def __init__(self) -> None:
        self.manifest = "".join(manifest_line(f"f{n}.bin", b"%d" % n) for n in range(FILES)).encode()
        self.held = 0

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_line = await reader.readline()
        await reader.readuntil(b"\r\n\r\n")
        if b"/PULP_MANIFEST " in request_line:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(self.manifest))
            writer.write(self.manifest)
            await writer.drain()
        else:
            self.held += 1
            await reader.read()  # until the client closes
            self.held -= 1
        writer.close()


@pytest.fixture(scope="module")
def stalling() -> Iterator[tuple[str, _Stalling]]:
    remote = _Stalling()
    with serve_raw(remote) as base:
        yield base, remote


@pytest.mark.parametrize("processes", ["1", "2"])
@pytest.mark.parametrize("engine", ENGINES)
def test_sigterm_ends_a_sync_at_the_bound_within_seconds(
    db: Path, stalling: tuple[str, _Stalling], engine: str, processes: str
) -> None:
    """In one process, and split across two (whose shards the parent stops with SIGTERM in turn)."""
    base, remote = stalling
    _wait_for(lambda: remote.held == 0, "the previous test's connections are gone")
    command = [str(PULP_SYNC), "sync", base + "PULP_MANIFEST", "--repository", "stalled", "--downloader", engine,
               "--concurrency", str(defaults.MAX_DOWNLOAD_CONCURRENCY), "--processes", processes]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        full = lambda: remote.held >= defaults.MAX_DOWNLOAD_CONCURRENCY  # noqa: E731
        _wait_for(lambda: full() or child.poll() is not None, "every slot waiting on the remote")
        assert full(), "every slot waits on the remote"
        workspace = workspace_of(child.pid)

        child.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        _, stderr = child.communicate(timeout=120)
        took = time.monotonic() - signalled
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    assert child.returncode == 143, stderr
    assert took < STOPPED_WITHIN, f"{took:.1f} s from SIGTERM to the end"
    assert workspace is not None and not workspace.exists(), "the partial downloads are removed"
    assert not Repository.objects.filter(name="stalled").exists(), "its first sync stopped: no empty repository left"


@pytest.mark.parametrize("worker_class", ["fork", "simple"])
def test_a_worker_stopped_cold_ends_a_sync_at_the_bound_within_seconds(
    db: Path, stalling: tuple[str, _Stalling], workers: Workers, worker_class: str
) -> None:
    """RQ's cold shutdown (a second SIGTERM; the first lets the task finish) of a worker whose futures sync
    waits on the remote: RQ kills a forking worker's work horse, and a SimpleWorker unwinds the sync in its
    own process, which waited out the downloads' timeout before (60 s)."""
    base, remote = stalling
    _wait_for(lambda: remote.held == 0, "the previous test's connections are gone")
    repository, source = sync_source(base + "PULP_MANIFEST", concurrency=defaults.MAX_DOWNLOAD_CONCURRENCY)
    worker = workers.start(worker_class)
    task = dispatch_sync(repository, source, tasking="rq")
    _wait_for(lambda: remote.held >= defaults.MAX_DOWNLOAD_CONCURRENCY, "every slot waiting on the remote")
    worker.send_signal(signal.SIGTERM)
    _wait_for(lambda: "warm shut down requested" in workers.output(), "the warm shutdown")
    time.sleep(1.5)  # RQ ignores a second signal within a second of the first
    worker.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    worker.wait(timeout=120)
    took = time.monotonic() - signalled

    assert took < STOPPED_WITHIN, f"{took:.1f} s from the second SIGTERM to the end"
    task.refresh_from_db()
    assert task.state == TaskState.FAILED and "was stopped (SIGTERM) during the sync" in task.error


def _wait_for(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.05)
