"""downloaders.offload: a body's sha256 computed in the hashing thread, the same checks as BodyWriter."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from downloaders.errors import DigestMismatch, SizeMismatch
from downloaders.offload import OFFLOAD_MIN_BYTES, HashingThread
from downloaders.streaming import BodyWriter
from downloaders.types import DownloadRequest

T = TypeVar("T")
CHUNK = 100_000


def request_for(body: bytes, digest: str | None = None) -> DownloadRequest:
    return DownloadRequest("http://127.0.0.1/x", "x", digest or hashlib.sha256(body).hexdigest(), len(body))


def run_with_hashing(work: Callable[[HashingThread], Awaitable[T]], backlog: int = 64) -> T:
    """`work` on a fresh loop with its hashing thread, closed (every queued step run) before returning."""

    async def main() -> T:
        hashing = HashingThread(asyncio.get_running_loop(), backlog)
        try:
            return await work(hashing)
        finally:
            hashing.close()

    return asyncio.run(main())


async def write_body(hashing: HashingThread, request: DownloadRequest, body: bytes, temp_dir: Path) -> tuple[Path, str]:
    with hashing.body(request, temp_dir) as writer:
        for start in range(0, len(body), CHUNK):
            await writer.write(body[start : start + CHUNK])
        return writer.path, await writer.finish()


@pytest.fixture
def hashed_in(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Names of the threads that ran BodyWriter.add_to_digest."""
    threads: set[str] = set()
    original = BodyWriter.add_to_digest

    def recording(self: BodyWriter, chunk: bytes) -> None:
        threads.add(threading.current_thread().name)
        original(self, chunk)

    monkeypatch.setattr(BodyWriter, "add_to_digest", recording)
    return threads


def test_a_large_body_is_hashed_in_the_hashing_thread_and_verified(tmp_path: Path, hashed_in: set[str]) -> None:
    body = bytes(range(256)) * (3 * OFFLOAD_MIN_BYTES // 256)
    path, digest = run_with_hashing(lambda hashing: write_body(hashing, request_for(body), body, tmp_path))
    assert digest == hashlib.sha256(body).hexdigest()
    assert path.read_bytes() == body
    assert hashed_in == {"hashing"}


def test_a_small_body_is_hashed_on_the_loop(tmp_path: Path, hashed_in: set[str]) -> None:
    body = b"small" * 100
    path, digest = run_with_hashing(lambda hashing: write_body(hashing, request_for(body), body, tmp_path))
    assert (digest, path.read_bytes()) == (hashlib.sha256(body).hexdigest(), body)
    assert hashed_in == {threading.main_thread().name}


def test_a_full_backlog_makes_the_loop_wait_and_loses_nothing(tmp_path: Path) -> None:
    body = bytes(range(256)) * 40_000
    path, digest = run_with_hashing(lambda hashing: write_body(hashing, request_for(body), body, tmp_path), backlog=1)
    assert (digest, path.read_bytes()) == (hashlib.sha256(body).hexdigest(), body)


def test_a_wrong_digest_fails_at_finish_and_leaves_no_file(tmp_path: Path) -> None:
    body = b"\x01" * (2 * OFFLOAD_MIN_BYTES)
    with pytest.raises(DigestMismatch):
        run_with_hashing(lambda hashing: write_body(hashing, request_for(body, "0" * 64), body, tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_body_longer_than_expected_fails_at_once_and_leaves_no_file(tmp_path: Path) -> None:
    body = b"\x02" * (2 * OFFLOAD_MIN_BYTES)
    short = DownloadRequest("http://127.0.0.1/x", "x", hashlib.sha256(body).hexdigest(), OFFLOAD_MIN_BYTES + 1)
    with pytest.raises(SizeMismatch):
        run_with_hashing(lambda hashing: write_body(hashing, short, body, tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_cancelled_body_leaves_no_file(tmp_path: Path) -> None:
    body = b"\x03" * (4 * OFFLOAD_MIN_BYTES)
    started = asyncio.Event()

    async def slow_body(hashing: HashingThread) -> None:
        with hashing.body(request_for(body), tmp_path) as writer:
            await writer.write(body[:CHUNK])
            started.set()
            await asyncio.sleep(60)

    async def cancel_it(hashing: HashingThread) -> None:
        task = asyncio.create_task(slow_body(hashing))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run_with_hashing(cancel_it)
    assert list(tmp_path.iterdir()) == []
