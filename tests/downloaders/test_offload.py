"""downloaders.offload: a body's sha256 computed in a hashing lane, the same checks as BodyWriter."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import threading
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from contextlib import closing
from pathlib import Path
from typing import TypeVar

import pytest

import downloaders
from downloaders import DownloaderSettings, DownloadResult, defaults
from downloaders.errors import DigestMismatch, SizeMismatch
from downloaders.offload import BACKLOG_CHUNKS, OFFLOAD_MIN_BYTES, HashingLanes, hashing_lanes
from downloaders.streaming import BodyWriter
from downloaders.types import DownloadRequest
from tests.downloaders.conftest import Recorder

T = TypeVar("T")
CHUNK = 100_000


def request_for(body: bytes, digest: str | None = None, name: str = "x") -> DownloadRequest:
    return DownloadRequest(f"http://127.0.0.1/{name}", name, digest or hashlib.sha256(body).hexdigest(), len(body))


def big_body(seed: int, size: int = 3 * OFFLOAD_MIN_BYTES) -> bytes:
    """Bytes that differ chunk by chunk, so chunks hashed out of order give another digest."""
    return random.Random(seed).randbytes(size)


def run_with_hashing(work: Callable[[HashingLanes], Awaitable[T]], backlog: int = 64, lanes: int = 1) -> T:
    """`work` on a fresh loop with its hashing lanes, closed (every queued step run) before returning."""

    async def main() -> T:
        hashing = HashingLanes(asyncio.get_running_loop(), lanes, backlog)
        try:
            return await work(hashing)
        finally:
            hashing.close()

    return asyncio.run(main())


async def write_body(hashing: HashingLanes, request: DownloadRequest, body: bytes, temp_dir: Path) -> tuple[Path, str]:
    with hashing.body(request, temp_dir) as writer:
        for start in range(0, len(body), CHUNK):
            await writer.write(body[start : start + CHUNK])
        return writer.path, await writer.finish()


@pytest.fixture
def hashed_in(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    """Names of the threads that ran BodyWriter.add_to_digest, by the URL of the body's request."""
    threads: dict[str, set[str]] = defaultdict(set)
    original = BodyWriter.add_to_digest

    def recording(self: BodyWriter, chunk: bytes) -> None:
        threads[self.request.url].add(threading.current_thread().name)
        original(self, chunk)

    monkeypatch.setattr(BodyWriter, "add_to_digest", recording)
    return threads


def names(hashed_in: dict[str, set[str]]) -> set[str]:
    return set().union(*hashed_in.values())


def test_a_large_body_is_hashed_in_the_hashing_thread_and_verified(
    tmp_path: Path, hashed_in: dict[str, set[str]]
) -> None:
    body = bytes(range(256)) * (3 * OFFLOAD_MIN_BYTES // 256)
    path, digest = run_with_hashing(lambda hashing: write_body(hashing, request_for(body), body, tmp_path))
    assert digest == hashlib.sha256(body).hexdigest()
    assert path.read_bytes() == body
    assert names(hashed_in) == {"hashing"}


def test_a_small_body_is_hashed_on_the_loop(tmp_path: Path, hashed_in: dict[str, set[str]]) -> None:
    body = b"small" * 100
    path, digest = run_with_hashing(lambda hashing: write_body(hashing, request_for(body), body, tmp_path), lanes=2)
    assert (digest, path.read_bytes()) == (hashlib.sha256(body).hexdigest(), body)
    assert names(hashed_in) == {threading.main_thread().name}


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


@pytest.mark.parametrize("lanes", [1, 3])
def test_a_cancelled_body_leaves_no_file_and_leaves_its_lane(tmp_path: Path, lanes: int) -> None:
    body = b"\x03" * (4 * OFFLOAD_MIN_BYTES)
    started = asyncio.Event()

    async def slow_body(hashing: HashingLanes) -> None:
        with hashing.body(request_for(body), tmp_path) as writer:
            await writer.write(body[:CHUNK])
            started.set()
            await asyncio.sleep(60)

    async def cancel_it(hashing: HashingLanes) -> list[int]:
        task = asyncio.create_task(slow_body(hashing))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return [lane.bodies for lane in hashing.lanes]

    assert run_with_hashing(cancel_it, lanes=lanes) == [0] * lanes
    assert list(tmp_path.iterdir()) == []


# Several lanes


def test_big_bodies_at_once_each_hash_in_a_lane_of_their_own(tmp_path: Path, hashed_in: dict[str, set[str]]) -> None:
    bodies = {f"b{seed}": big_body(seed) for seed in range(3)}

    async def all_at_once(hashing: HashingLanes) -> list[tuple[Path, str]]:
        entered = asyncio.Barrier(len(bodies))

        async def one(name: str, body: bytes) -> tuple[Path, str]:
            with hashing.body(request_for(body, name=name), tmp_path) as writer:
                await entered.wait()  # every body in flight before any chunk is written
                for start in range(0, len(body), CHUNK):
                    await writer.write(body[start : start + CHUNK])
                return writer.path, await writer.finish()

        return await asyncio.gather(*(one(name, body) for name, body in bodies.items()))

    written = run_with_hashing(all_at_once, lanes=3)
    for (path, digest), body in zip(written, bodies.values(), strict=True):
        assert (digest, path.read_bytes()) == (hashlib.sha256(body).hexdigest(), body)
    assert all(len(threads) == 1 for threads in hashed_in.values())  # a body stays on its lane
    assert names(hashed_in) == {"hashing-0", "hashing-1", "hashing-2"}


@pytest.mark.parametrize("lanes", [1, 2])
def test_interleaved_chunks_of_bodies_sharing_a_lane_stay_in_order(tmp_path: Path, lanes: int) -> None:
    bodies = [big_body(seed, 2 * OFFLOAD_MIN_BYTES + 12_345) for seed in range(4)]

    async def interleaved(hashing: HashingLanes) -> list[str]:
        requests = [request_for(body, name=f"b{index}") for index, body in enumerate(bodies)]
        writers = [hashing.body(request, tmp_path) for request in requests]
        assert [lane.bodies for lane in hashing.lanes] == [len(bodies) // lanes] * lanes
        for start in range(0, max(map(len, bodies)), CHUNK):  # chunk 1 of each body, then chunk 2 of each...
            for writer, body in zip(writers, bodies, strict=True):
                if chunk := body[start : start + CHUNK]:
                    await writer.write(chunk)
        digests = [await writer.finish() for writer in writers]
        for writer in writers:
            writer.__exit__(None, None, None)
        return digests

    digests = run_with_hashing(interleaved, backlog=2, lanes=lanes)
    assert digests == [hashlib.sha256(body).hexdigest() for body in bodies]


def test_a_new_body_goes_to_the_lane_with_the_fewest_bodies_in_flight(tmp_path: Path) -> None:
    big, small = big_body(1), b"small"

    async def pick(hashing: HashingLanes) -> list[list[int]]:
        loads = []
        first = hashing.body(request_for(big, name="first"), tmp_path)
        loads.append([lane.bodies for lane in hashing.lanes])
        with hashing.body(request_for(big, name="second"), tmp_path):
            loads.append([lane.bodies for lane in hashing.lanes])
            with hashing.body(request_for(small, name="small"), tmp_path):  # hashed on the loop: no lane
                loads.append([lane.bodies for lane in hashing.lanes])
            with first:
                pass
            loads.append([lane.bodies for lane in hashing.lanes])
            with hashing.body(request_for(big, name="third"), tmp_path):
                loads.append([lane.bodies for lane in hashing.lanes])
        return loads

    assert run_with_hashing(pick, lanes=2) == [[1, 0], [1, 1], [1, 1], [0, 1], [1, 1]]


def test_the_backlog_is_shared_out_among_the_lanes() -> None:
    async def backlogs(lanes: int) -> list[int]:
        hashing = HashingLanes(asyncio.get_running_loop(), lanes, BACKLOG_CHUNKS)
        hashing.close()
        return [lane.backlog for lane in hashing.lanes]

    assert asyncio.run(backlogs(1)) == [BACKLOG_CHUNKS]
    assert asyncio.run(backlogs(4)) == [BACKLOG_CHUNKS // 4] * 4
    assert sum(asyncio.run(backlogs(defaults.MAX_HASHING_LANES))) <= BACKLOG_CHUNKS


def test_an_error_in_one_lane_reaches_its_coroutine_and_the_other_lanes_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = BodyWriter.add_to_digest

    def failing(self: BodyWriter, chunk: bytes) -> None:
        if self.request.relative_path == "bad":
            raise RuntimeError("the hash broke")
        original(self, chunk)

    monkeypatch.setattr(BodyWriter, "add_to_digest", failing)
    bad, good, after = big_body(1), big_body(2), big_body(3)

    async def both(hashing: HashingLanes) -> tuple[BaseException | None, list[tuple[Path, str]]]:
        failed, good_one = await asyncio.gather(
            write_body(hashing, request_for(bad, name="bad"), bad, tmp_path),
            write_body(hashing, request_for(good, name="good"), good, tmp_path),
            return_exceptions=True,
        )
        assert not isinstance(good_one, BaseException)
        # the lane that failed still hashes the bodies given to it after the failure
        later = [write_body(hashing, request_for(after, name=f"a{n}"), after, tmp_path) for n in range(2)]
        return failed if isinstance(failed, BaseException) else None, [good_one, *await asyncio.gather(*later)]

    failure, [(good_path, good_digest), *later] = run_with_hashing(both, lanes=2)
    assert isinstance(failure, RuntimeError) and str(failure) == "the hash broke"
    assert (good_digest, good_path.read_bytes()) == (hashlib.sha256(good).hexdigest(), good)
    assert [digest for _, digest in later] == [hashlib.sha256(after).hexdigest()] * 2
    assert sorted(tmp_path.iterdir()) == sorted([good_path, *(path for path, _ in later)])  # none left by "bad"


def test_close_runs_what_every_lane_has_queued_then_ends_every_lane() -> None:
    ran: list[int] = []

    def slow_step(lane: int) -> None:
        time.sleep(0.005)
        ran.append(lane)

    async def queue_then_close() -> set[str]:
        hashing = HashingLanes(asyncio.get_running_loop(), 3, backlog=30)
        for index, lane in enumerate(hashing.lanes):
            for _ in range(5):
                await lane.run(slow_step, index)
        hashing.close()
        return {thread.name for thread in threading.enumerate()}

    alive = asyncio.run(queue_then_close())
    assert sorted(ran) == [0] * 5 + [1] * 5 + [2] * 5
    assert not alive & {"hashing-0", "hashing-1", "hashing-2"}


def test_lanes_must_be_at_least_one() -> None:
    async def none() -> None:
        HashingLanes(asyncio.get_running_loop(), 0)

    with pytest.raises(ValueError, match="at least 1"):
        asyncio.run(none())


# How many lanes


@pytest.mark.parametrize(
    ("cpus", "concurrency", "lanes"),
    [
        (1, 10, 1),  # no spare CPU: still one lane
        (2, 10, 1),  # one for the loop, one lane: as before lanes existed
        (4, 10, 3),
        (16, 10, defaults.MAX_HASHING_LANES),
        (16, 3, 3),  # never more lanes than downloads in flight
        (16, 1, 1),
    ],
)
def test_lanes_come_from_the_cpus_this_process_may_use(
    monkeypatch: pytest.MonkeyPatch, cpus: int, concurrency: int, lanes: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)  # the machine's count is not what the process may use
    assert hashing_lanes(concurrency) == lanes


def test_without_affinity_the_lanes_come_from_the_cpu_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert hashing_lanes(10) == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert hashing_lanes(10) == 1


def test_the_asyncio_engine_hashes_big_bodies_in_its_lanes(
    monkeypatch: pytest.MonkeyPatch, serve: Callable[..., str], tmp_path: Path, hashed_in: dict[str, set[str]]
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)  # 3 lanes
    server, bodies = Recorder(), {f"f{seed}": big_body(seed) for seed in range(6)}
    for name, body in bodies.items():
        server.body(f"/{name}", body)
    base = serve(server)
    requests = [
        DownloadRequest(base + name, name, hashlib.sha256(body).hexdigest(), len(body))
        for name, body in bodies.items()
    ]
    downloader = downloaders.load("asyncio")(DownloaderSettings(download_concurrency=4, max_retries=0))
    with closing(downloader.fetch(requests, tmp_path)) as outcomes:
        results = {outcome.request.relative_path: outcome for outcome in outcomes}
    for name, body in bodies.items():
        result = results[name]
        assert isinstance(result, DownloadResult), result
        assert result.path.read_bytes() == body
    assert names(hashed_in) <= {"hashing-0", "hashing-1", "hashing-2"}
    assert all(len(threads) == 1 for threads in hashed_in.values())
