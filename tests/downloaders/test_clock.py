"""One clock (issue 18): every engine's latency runs from the moment a download holds its slot to its
verified file; the wait for the slot is queue time, and a backoff is neither."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import downloaders
from conformance.checks import read_requests, results_of
from downloaders import DownloaderSettings, DownloadJob, DownloadRequest, DownloadResult, retry
from fixtures.faults import FaultConfig
from fixtures.profiles import NetworkProfile
from fixtures.server import serve_in_background
from tests.downloaders.conftest import BUILT_IN

HELD = 0.1
"""Seconds the test servers hold every response before its first byte."""
RETRY_AFTER = 1
"""Seconds the backoff test's 429s ask for."""


class FakeClock:
    """time.monotonic for DownloadJob, moved on by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(retry, "time", SimpleNamespace(monotonic=fake.monotonic))
    return fake


def _job(clock: FakeClock) -> DownloadJob:
    """A job taken on now, by the fake clock (`started`'s default factory is the real time.monotonic)."""
    return DownloadJob(DownloadRequest("http://example.test/a", "a"), started=clock.now)


def _fetch(engine: str, requests: list[DownloadRequest], temp_dir: Path, **settings: object) -> list[DownloadResult]:
    downloader = downloaders.load(engine)(DownloaderSettings(**settings))  # type: ignore[arg-type]
    temp_dir.mkdir(exist_ok=True)
    results = results_of(downloader.fetch(iter(requests), temp_dir))
    assert len(results) == len(requests), "every download must succeed"
    return results


def test_a_job_clocks_waits_attempts_and_backoffs_apart(clock: FakeClock) -> None:
    job = _job(clock)
    clock.now += 3.0  # waiting for a slot
    with pytest.raises(RuntimeError), job.holding():
        clock.now += 0.5  # a failed attempt
        raise RuntimeError("the attempt failed")
    job.back_off(2.0)
    clock.now += 2.0 + 0.25  # the backoff, and then a wait for the slot again
    job.hold()
    clock.now += 0.5
    job.release()
    result = job.result(Path("a"), "0" * 64, 1)
    assert (result.latency, result.queue_seconds, result.seconds) == (1.0, 3.25, 6.25)


def test_a_backoff_that_ends_a_little_early_is_no_negative_wait(clock: FakeClock) -> None:
    job = _job(clock)
    assert job.back_off(1.0) == 1.0
    clock.now += 0.999
    job.hold()
    assert job.queue_seconds == 0.0


def test_the_engines_agree_on_latency(tree: Path, tmp_path: Path) -> None:
    """The user's report: on the same files at download_concurrency 1, asyncio's p50 read twice futures'."""
    with serve_in_background(tree, profile=NetworkProfile(latency=HELD, name="held")) as running:
        requests = read_requests(tree, running.url, "many-small/PULP_MANIFEST")[:8]
        fetched = {engine: _fetch(engine, requests, tmp_path / engine, download_concurrency=1) for engine in BUILT_IN}
    p50 = {engine: statistics.median(result.latency or 0.0 for result in fetched[engine]) for engine in BUILT_IN}
    assert all(HELD <= seconds < 3 * HELD for seconds in p50.values()), f"p50s for responses held {HELD} s: {p50}"
    assert abs(p50["asyncio"] - p50["futures"]) < HELD / 2, f"p50 latencies of the same downloads: {p50}"
    waited = [result.queue_seconds or 0.0 for result in fetched["asyncio"][1:]]
    assert min(waited) > 0.8 * HELD, f"asyncio takes a download on while another holds the slot: {waited}"


@pytest.mark.parametrize("engine", BUILT_IN)
def test_a_backoff_is_neither_latency_nor_queue_time(engine: str, tree: Path, tmp_path: Path) -> None:
    faults = FaultConfig(http_429=1.0, max_per_path=1, retry_after=RETRY_AFTER)
    with serve_in_background(tree, profile=NetworkProfile(latency=HELD, name="held"), faults=faults) as running:
        requests = read_requests(tree, running.url, "many-small/PULP_MANIFEST")[:2]
        started = time.monotonic()
        results = _fetch(engine, requests, tmp_path, download_concurrency=2)
        elapsed = time.monotonic() - started
    assert elapsed >= RETRY_AFTER + 2 * HELD
    for result in results:
        assert result.attempts == 2 and result.seconds >= RETRY_AFTER + 2 * HELD, result
        assert 2 * HELD <= (result.latency or 0.0) < RETRY_AFTER / 2, f"two attempts held {HELD} s each: {result}"
        assert (result.queue_seconds or 0.0) < HELD, f"a slot was free for each attempt: {result}"
