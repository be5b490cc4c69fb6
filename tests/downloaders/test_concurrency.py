"""The concurrency limit against a simulated link: no network, a clock of our own.

`Link` is a throughput curve (bytes per second in total for n downloads receiving), shared equally by the
downloads receiving, optionally with a server that refuses (429) attempts beyond `allowed` at once, and a
round trip (`latency`) before each download's first byte. Each download is a file of `size` bytes (`FILE`
by default; behind a round trip, from half to one and a half times that, so that the downloads do not wait
and receive in lockstep, as no real ones do) reported in chunks, as the engines report them: from within
its attempt, as they do.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import pytest

from downloaders import defaults
from downloaders.concurrency import AdaptiveConcurrency, ConcurrencyLimit, FixedConcurrency, is_overload, limit_for
from downloaders.errors import DigestMismatch, DownloadConnectionError, HttpStatusError
from downloaders.settings import DownloaderSettings

MB = 1_000_000
FILE = 4 * MB
CHUNK = 256 * 1024
STEP = 0.005


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Download:
    """One attempt in a context of its own, as each asyncio task and each thread has one."""

    attempt: AbstractContextManager[None]
    context: contextvars.Context
    started: float
    size: int
    received: int = 0
    unreported: int = 0


@dataclass
class Link:
    """A throughput curve shared by the downloads in flight, and the record of a run against it."""

    curve: Callable[[int], float]
    allowed: int | None = None
    noise: float = 0.0
    latency: float = 0.0
    size: int = FILE
    files: int | None = None
    seed: int = 0
    limits: list[int] = field(default_factory=list)
    refused: int = 0
    completed: int = 0
    received: int = 0

    def run(self, limit: ConcurrencyLimit, clock: Clock, seconds: float) -> None:
        """Keep `limit.limit` downloads in flight for `seconds` (or until `files` ran out), then cancel those
        still in flight, as an engine's fetch cancels its tasks."""
        flying: list[Download] = []
        try:
            self._keep(limit, clock, seconds, flying)
        finally:
            for download in flying:
                cancelled = asyncio.CancelledError()
                download.context.run(download.attempt.__exit__, asyncio.CancelledError, cancelled, None)

    def _keep(self, limit: ConcurrencyLimit, clock: Clock, seconds: float, flying: list[Download]) -> None:
        rng = random.Random(self.seed)
        started = 0
        while clock.now < seconds:
            while len(flying) < limit.limit and (self.files is None or started < self.files):
                size = round(self.size * rng.uniform(0.5, 1.5))
                flying.append(self._start(limit, clock.now, size))
                started += 1
                if self.allowed is not None and len(flying) > self.allowed:
                    self._refuse(flying.pop())
            self.limits.append(limit.limit)
            assert 1 <= limit.limit <= limit.bound
            if not flying:
                return
            receiving = [download for download in flying if clock.now - download.started >= self.latency]
            noise = 1 + rng.uniform(-self.noise, self.noise)
            share = self.curve(len(receiving)) * STEP * noise / max(len(receiving), 1)
            clock.now += STEP
            for download in receiving:
                self._advance(limit, download, int(share))
                self.received += int(share)
                if download.received >= download.size:
                    flying.remove(download)
                    download.context.run(download.attempt.__exit__, None, None, None)
                    self.completed += 1

    @staticmethod
    def _start(limit: ConcurrencyLimit, now: float, size: int) -> Download:
        attempt, context = limit.attempt(), contextvars.Context()
        context.run(attempt.__enter__)
        return Download(attempt, context, now, size)

    def _refuse(self, download: Download) -> None:
        self.refused += 1
        error = HttpStatusError("http://remote/f", 429, "Too Many Requests", 1.0)
        assert download.context.run(download.attempt.__exit__, HttpStatusError, error, None) is False

    @staticmethod
    def _advance(limit: ConcurrencyLimit, download: Download, size: int) -> None:
        download.received += size
        download.unreported += size
        while download.unreported >= CHUNK or (download.received >= download.size and download.unreported):
            chunk = min(CHUNK, download.unreported)
            download.context.run(limit.transferred, chunk)
            download.unreported -= chunk


def knee(at: int, per_download: float = 8 * MB) -> Callable[[int], float]:
    """Linear up to `at` downloads, flat after: the knee is `at`."""
    return lambda n: per_download * min(n, at)


def run(curve: Callable[[int], float], seconds: float = 60.0, maximum: int = 64, **link: object) -> tuple[
        AdaptiveConcurrency, Link]:
    clock = Clock()
    limit = AdaptiveConcurrency(maximum, clock=clock)
    simulated = Link(curve, **link)  # type: ignore[arg-type]
    simulated.run(limit, clock, seconds)
    return limit, simulated


@pytest.mark.parametrize("at", [3, 6, 12, 20, 40])
@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_it_settles_within_a_tenth_of_the_knee(at: int, noise: float) -> None:
    limit, _ = run(knee(at), noise=noise)
    assert abs(limit.settled() - at) <= max(1, 0.1 * at), limit.trajectory()


def knee_in_flight(link: dict[str, object], seconds: float, maximum: int = 64) -> int:
    """The fewest downloads in flight, at a fixed limit, whose goodput is within `defaults.AUTO_TOLERANCE` of
    the plateau's: measured, as a sweep would find it, by bisection, as goodput on a link that more downloads
    never slow only grows with the limit (the plateau's is `maximum`'s)."""

    def goodput(fixed: int) -> float:
        clock = Clock()
        simulated = Link(**link)  # type: ignore[arg-type]
        simulated.run(FixedConcurrency(fixed, clock=clock), clock, seconds)
        return simulated.received / seconds

    target = (1 - defaults.AUTO_TOLERANCE) * goodput(maximum)
    short, on = 0, maximum
    while on - short > 1:
        middle = (short + on) // 2
        short, on = (short, middle) if goodput(middle) >= target else (middle, on)
    return on


@pytest.mark.parametrize(("at", "size"), [(10, 400_000), (12, 100_000)])
def test_behind_a_round_trip_it_settles_within_a_tenth_of_the_knee(at: int, size: int) -> None:
    """The `slow` profile's link (150 ms to the first byte, 1 MB/s a download, `at` downloads receiving fill
    it): a new limit's downloads bring nothing for a round trip, and a lower one's leftovers keep bringing
    bytes until they end, so a window counted before either settled misreads the limit. Each download waits
    a round trip before it receives, so the knee in flight is above `at`, the more so the smaller the files:
    files of 400 kB and 100 kB, whose round trip is a quarter and three fifths of their download (the
    100-file manifest at scale 0.1 is the first); big files, whose round trip is a few percent of it, are
    test_it_settles_within_a_tenth_of_the_knee's."""
    link = {"curve": knee(at, 1 * MB), "latency": 0.15, "size": size}
    best = knee_in_flight(link, seconds=60.0)
    limit, _ = run(seconds=180.0, **link)  # type: ignore[arg-type]
    assert abs(limit.settled() - best) <= max(1, 0.1 * best), (best, limit.trajectory())


def test_a_link_that_grows_in_proportion_to_the_bound_is_held_near_it_without_halving_back() -> None:
    """2,000 small files behind wan latency (40 ms, 2.5 kB each): every download more pays, up to
    max_concurrency. Once the doubling reaches the bound the search steps back only near it (a secant step
    on the goodputs of the limits short of the best and at it), not halfway down, each window there a loss:
    the first run of experiments/auto.toml went 64, 40, 52, 58 where 64 was the best."""
    limit, _ = run(lambda n: 62_500.0 * n, seconds=10.0, latency=0.04, size=2_500)
    after_the_bound = [change.limit for change in limit.trajectory() if change.seconds > 0][2:]
    assert after_the_bound and min(after_the_bound) >= 48, limit.trajectory()
    assert limit.settled() >= 0.9 * 64, limit.trajectory()


def test_on_a_plateau_from_the_start_it_holds_fewer_than_it_began_with() -> None:
    limit, _ = run(lambda n: 500 * MB)
    assert limit.settled() <= defaults.AUTO_START
    assert limit.settled() < defaults.DOWNLOAD_CONCURRENCY


def test_where_more_downloads_slow_the_server_it_holds_near_the_best() -> None:
    """A contended server: flat to 8, then each download beyond costs 5% of the total."""
    limit, _ = run(lambda n: 80 * MB * min(n, 8) / 8 / (1 + 0.05 * max(0, n - 8)))
    assert 7 <= limit.settled() <= 9, limit.trajectory()


def test_it_never_exceeds_max_concurrency_even_where_more_always_pays() -> None:
    limit, simulated = run(knee(1000, 1 * MB), seconds=180.0, maximum=24)
    assert max(simulated.limits) == 24
    assert limit.settled() >= 0.9 * 24, "within a tenth of the knee, which max_concurrency is here"


@pytest.mark.parametrize("allowed", [2, 5, 8])
def test_on_429_bursts_it_backs_off_to_what_the_server_allows_and_stays(allowed: int) -> None:
    limit, simulated = run(knee(20), seconds=120.0, allowed=allowed)
    assert allowed - 1 <= limit.settled() <= allowed, limit.trajectory()
    late = simulated.limits[len(simulated.limits) // 2:]
    assert max(late) <= allowed + max(1, round(defaults.AUTO_PROBE_STEP * allowed)), "probes stay a step above"
    assert simulated.refused < 0.05 * simulated.completed, (simulated.refused, simulated.completed)


def test_a_fault_here_and_there_is_no_overload() -> None:
    """One 503 in a window of many ended attempts cuts nothing."""
    clock = Clock()
    limit = AdaptiveConcurrency(64, start=16, clock=clock)
    for index in range(40):
        with pytest.raises(HttpStatusError) if index == 20 else nullcontext():
            with limit.attempt():
                if index == 20:
                    raise HttpStatusError("http://remote/f", 503, "Service Unavailable")
    assert limit.limit == 16


def test_a_burst_of_refused_connections_cuts_the_limit_at_once() -> None:
    clock = Clock()
    limit = AdaptiveConcurrency(64, start=16, clock=clock)
    for _ in range(2):
        with pytest.raises(DownloadConnectionError), limit.attempt():
            raise DownloadConnectionError("http://remote/f", "connection refused")
    assert limit.limit == 8
    assert limit.trajectory()[-1].goodput is None


def test_a_lower_limit_is_measured_only_once_the_downloads_beyond_it_ended() -> None:
    """Cut from 16 to 8 with 14 still in flight: their bytes are not the lower limit's goodput."""
    clock = Clock()
    limit = AdaptiveConcurrency(64, start=16, clock=clock)
    attempts = [limit.attempt() for _ in range(16)]
    for attempt in attempts:
        attempt.__enter__()
    refused = DownloadConnectionError("http://remote/f", "connection refused")
    for attempt in attempts[:2]:
        assert attempt.__exit__(DownloadConnectionError, refused, None) is False
    assert limit.limit == 8

    def stream(seconds: float) -> None:
        for _ in range(int(seconds / STEP)):
            clock.now += STEP
            limit.transferred(CHUNK)

    stream(10.0)
    assert limit.trajectory()[-1].goodput is None, "no window counted while 14 were in flight"
    for attempt in attempts[2:8]:
        attempt.__exit__(None, None, None)
    stream(10.0)
    assert limit.trajectory()[-1].goodput is not None, "8 in flight: the window counted, and decided"
    for attempt in attempts[8:]:
        attempt.__exit__(None, None, None)


def test_an_attempts_first_chunk_in_its_own_context_is_its_first_byte() -> None:
    """The wait for a first byte is each attempt's own, however many are in flight, and a chunk outside any
    attempt (a plugin that reports from elsewhere) says nothing of it."""
    clock = Clock()
    limit = AdaptiveConcurrency(64, clock=clock)
    contexts = [contextvars.Context() for _ in range(2)]
    attempts = [limit.attempt() for _ in contexts]
    for context, attempt in zip(contexts, attempts, strict=True):
        context.run(attempt.__enter__)
    clock.now = 0.3
    limit.transferred(CHUNK)
    assert limit._round_trip is None
    contexts[1].run(limit.transferred, CHUNK)
    clock.now = 0.5
    contexts[1].run(limit.transferred, CHUNK)
    assert limit._round_trip == pytest.approx(0.3), "the first chunk of each attempt, once"
    contexts[0].run(limit.transferred, CHUNK)
    assert limit._round_trip == pytest.approx(0.3 + defaults.AUTO_ATTEMPT_WEIGHT * 0.2)
    for context, attempt in zip(contexts, attempts, strict=True):
        context.run(attempt.__exit__, None, None, None)


def test_a_short_window_is_ignored_so_the_end_of_a_manifest_is_no_plateau() -> None:
    """Two files to fetch at a time: the limit cannot be used, and it does not grow on that."""
    limit, _ = run(knee(40), seconds=20.0, files=2)
    assert limit.trajectory()[-1].limit == defaults.AUTO_START


def test_the_trajectory_starts_at_the_start_and_records_each_change() -> None:
    limit, _ = run(knee(12))
    changes = limit.trajectory()
    assert changes[0].limit == defaults.AUTO_START and changes[0].seconds == 0.0
    assert all(a.limit != b.limit for a, b in zip(changes, changes[1:], strict=False))
    assert [c.seconds for c in changes] == sorted(c.seconds for c in changes)


def test_a_long_fetch_thins_its_trajectory() -> None:
    clock = Clock()
    limit = FixedConcurrency(4, clock=clock)
    for step in range(5 * defaults.AUTO_TRAJECTORY):
        clock.now += 1
        limit._set(1 + step % 7, clock.now, None)
    assert len(limit.trajectory()) <= 2 * defaults.AUTO_TRAJECTORY


def test_settled_is_where_the_fetch_spent_the_most_time() -> None:
    clock = Clock()
    limit = FixedConcurrency(4, clock=clock)
    clock.now = 1.0
    limit._set(9, clock.now, None)
    clock.now = 5.0
    assert limit.settled() == 9
    limit._set(4, clock.now, None)
    clock.now = 6.0
    assert limit.settled() == 9


def test_limit_for_follows_the_settings() -> None:
    fixed = limit_for(DownloaderSettings(download_concurrency=7))
    assert (fixed.limit, fixed.bound) == (7, 7)
    adaptive = limit_for(DownloaderSettings(auto_concurrency=True, max_concurrency=32))
    assert (adaptive.limit, adaptive.bound) == (defaults.AUTO_START, 32)
    assert limit_for(DownloaderSettings(auto_concurrency=True, max_concurrency=2)).limit == 2


@pytest.mark.parametrize(("error", "overload"), [
    (HttpStatusError("u", 429, "Too Many Requests"), True),
    (HttpStatusError("u", 503, "Service Unavailable"), True),
    (HttpStatusError("u", 500, "Internal Server Error"), False),
    (HttpStatusError("u", 404, "Not Found"), False),
    (DownloadConnectionError("u", "reset"), True),
    (DigestMismatch("u", "a", "b"), False),
    (None, False),
])
def test_what_counts_as_overload(error: object, overload: bool) -> None:
    assert is_overload(error) is overload  # type: ignore[arg-type]
