"""How many downloads a fetch keeps in flight: a fixed number, or one found while it runs ("auto").

Every engine asks one object, `limit_for(settings)`, how many attempts may hold a slot now, and tells it
when an attempt starts and ends (`attempt()`) and when body bytes arrive (`transferred`). A fixed limit
(`FixedConcurrency`) only keeps the record; `AdaptiveConcurrency` uses what it is told to find the
link's knee: the fewest downloads in flight that get about the most goodput (body bytes per second).

Why goodput over windows of time, and not each request's latency as TCP Vegas (L. Brakmo and L.
Peterson, "TCP Vegas: end to end congestion avoidance on a global Internet", IEEE JSAC 13(8), 1995) and
Netflix's concurrency-limits (its Vegas and Gradient2 limits) compare it with the least seen: a
download's latency is mostly its size, and a repository's files range from bytes to gigabytes, so one
download's latency says little about queueing; and Envoy's gradient controller, built on that comparison,
over-reacted to ordinary jitter (envoy issue 9038) while its probe for the least latency ratcheted up
under sustained load (envoy issue 11579). By Little's law more in flight at the same goodput is more
latency per download, so the goodput plateau is the latency signal, summed over every byte.

The search follows BBR (N. Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 14(5),
2016): double the limit while goodput grows by at least `defaults.AUTO_GROWTH` (BBR's "full pipe" test;
quadruple it while goodput grows nearly in proportion, as BBR's startup gain of 2/ln 2 grows fast),
ignore windows that the work left short of downloads (BBR's app-limited samples: the end of a manifest,
or a rate limit, is no plateau), then narrow the bracket between the largest limit short of the plateau
and the smallest on it by secant steps (where a link that grows in proportion up to its knee and is flat
after it has its knee, within the bracket's middle half; halving where nothing short was measured), and
hold the smallest limit within `defaults.AUTO_TOLERANCE` of the best goodput, so
that a flat plateau is held with the fewest connections that fill it. Each new limit is measured only once
it is what runs: its added downloads have had twice the usual wait for a first byte (each attempt's first
chunk says how long it waited), and those beyond a lower limit have ended. While holding it probes a step
above and a step below now and then (`defaults.AUTO_PROBE_EVERY` windows), and moves when the link did.

Overload is the other signal (AIMD: D. Chiu and R. Jain, "Analysis of the increase and decrease
algorithms for congestion avoidance in computer networks", 1989, as in TCP Reno): 429, 503, refused or
reset connections and timeouts in more than `defaults.AUTO_OVERLOAD_SHARE` of a window's ended attempts
cut the limit at once, to half or to the largest limit that ran clean below it, and make the limit that
overloaded a ceiling for `defaults.AUTO_OVERLOAD_MEMORY` windows (twice as long at each recurrence),
bisected down to; a share and not any
one failure, because a fault here and there is no overload (BBRv2 likewise acts on a loss rate above a
threshold). A remote that allows N connections is so found from above in a few steps and held at N,
where AIMD's sawtooth would average three quarters of it. The limit never exceeds `maximum`
(`max_concurrency`): xet-core's +1-per-success limit grew to a thousand connections and ran out of file
descriptors (xet-core issue 326).
"""

from __future__ import annotations

import collections
import contextvars
import enum
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from downloaders import defaults
from downloaders.errors import DownloadConnectionError, DownloadError, DownloadTimeout, HttpStatusError
from downloaders.settings import DownloaderSettings

__all__ = [
    "ConcurrencyLimit",
    "FixedConcurrency",
    "AdaptiveConcurrency",
    "Change",
    "limit_for",
    "is_overload",
]

Clock = Callable[[], float]

OVERLOAD_STATUSES = frozenset({429, 503})
"""Statuses by which a server says it has more than it can take: Too Many Requests, Service Unavailable."""


def is_overload(error: DownloadError | None) -> bool:
    """Whether an attempt's error says the remote, or the path to it, has more than it can take."""
    if isinstance(error, HttpStatusError):
        return error.status in OVERLOAD_STATUSES
    return isinstance(error, DownloadConnectionError | DownloadTimeout)


@dataclass
class _Attempt:
    """An attempt under way, in the context (asyncio task or thread) that runs it: `transferred` from the
    same context tells its limit when the attempt's first byte came."""

    limit: ConcurrencyLimit
    started: float
    waiting: bool = True


_CURRENT: contextvars.ContextVar[_Attempt | None] = contextvars.ContextVar("downloaders_attempt", default=None)
"""The attempt the running task or thread is in. Each asyncio task runs in a context of its own, and each
thread has one, so an engine need not pass the attempt down to where its body's chunks arrive."""


@dataclass(frozen=True)
class Change:
    """The limit from `seconds` after the fetch began, and the goodput (bytes per second) of the window
    that decided it: None for the first limit, and for a cut on overload, which no window decides."""

    seconds: float
    limit: int
    goodput: float | None = None


def limit_for(settings: DownloaderSettings, clock: Clock = time.monotonic) -> ConcurrencyLimit:
    """The limit of one fetch with these settings: found while it runs with `auto_concurrency`, up to
    `max_concurrency`; else `download_concurrency`, fixed."""
    if settings.auto_concurrency:
        return AdaptiveConcurrency(settings.max_concurrency, clock=clock)
    return FixedConcurrency(settings.download_concurrency, clock=clock)


class ConcurrencyLimit:
    """The downloads in flight a fetch may have now, and the record of it (`trajectory`, `settled`).

    Thread-safe: the futures engine's threads call it at once. `watch(callback)` is called, from the
    thread that made the change, whenever the limit rises, so that an engine with downloads waiting for a
    slot can start them (the asyncio engine; the futures engine looks again within 0.2 s).
    """

    def __init__(self, limit: int, bound: int, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._begun = clock()
        self._lock = threading.Lock()
        self._limit = limit
        self._bound = bound
        self._changes = [Change(0.0, limit)]
        self._since = self._begun
        self._time_at: dict[int, float] = {}
        self._watchers: list[Callable[[], None]] = []
        self._cuts = 0
        """How many times overload cut the limit: an attempt that started before the latest cut says nothing
        of the limit since (`_before_the_cut`)."""

    @property
    def limit(self) -> int:
        """How many attempts may hold a slot now: an engine starts another only while fewer do."""
        return self._limit

    @property
    def bound(self) -> int:
        """The most `limit` will ever be: what an engine sizes its pools, threads and queues for."""
        return self._bound

    def watch(self, callback: Callable[[], None]) -> None:
        self._watchers.append(callback)

    @contextmanager
    def attempt(self) -> Iterator[None]:
        """Around one attempt that holds a slot: its start, and its end with the DownloadError it raised
        (an overload signal, or not), or cut short (cancelled: no signal at all)."""
        with self._lock:
            now = self._clock()
            self._started(now)
            cuts = self._cuts
        token = _CURRENT.set(_Attempt(self, now))
        try:
            yield
        except DownloadError as error:
            self._end(error, cuts)
            raise
        except BaseException:
            with self._lock:
                self._left(self._clock())
            raise
        finally:
            _CURRENT.reset(token)
        self._end(None, cuts)

    def transferred(self, size: int) -> None:
        """`size` bytes of a body arrived. Called from within the attempt's `with` (its task or thread, as
        the engines call it), the attempt's first chunk also says how long it waited for its first byte."""

    def _first_byte(self, now: float) -> float | None:
        """Seconds since the current attempt began, if this is its first chunk; else None."""
        current = _CURRENT.get()
        if current is None or current.limit is not self or not current.waiting:
            return None
        current.waiting = False
        return now - current.started

    def trajectory(self) -> tuple[Change, ...]:
        """The limits the fetch had, in order (at most about `defaults.AUTO_TRAJECTORY` of them: a long
        fetch's are thinned, every other one dropped, keeping the shape)."""
        with self._lock:
            return tuple(self._changes)

    def settled(self) -> int:
        """The limit the fetch spent the most time at, so far: the concurrency it settled on."""
        with self._lock:
            spent = dict(self._time_at)
            spent[self._limit] = spent.get(self._limit, 0.0) + self._clock() - self._since
        return max(spent, key=lambda limit: (spent[limit], -limit))

    def _end(self, error: DownloadError | None, cuts: int) -> None:
        with self._lock:
            now = self._clock()
            self._left(now)
            raised = self._ended(now, error if cuts == self._cuts else _before_the_cut(error))
        if raised:
            self._wake()

    def _started(self, now: float) -> None:
        """An attempt took a slot (under the lock)."""

    def _left(self, now: float) -> None:
        """An attempt gave its slot back (under the lock)."""

    def _ended(self, now: float, error: DownloadError | None) -> bool:
        """An attempt ended (under the lock, after `_left`); whether the limit rose."""
        return False

    def _set(self, limit: int, now: float, goodput: float | None) -> bool:
        """Change the limit (under the lock); whether it rose."""
        if limit == self._limit:
            return False
        self._time_at[self._limit] = self._time_at.get(self._limit, 0.0) + now - self._since
        self._since = now
        raised = limit > self._limit
        self._limit = limit
        self._changes.append(Change(round(now - self._begun, 3), limit, goodput))
        if len(self._changes) > 2 * defaults.AUTO_TRAJECTORY:
            self._changes = self._changes[::2] + ([self._changes[-1]] if len(self._changes) % 2 == 0 else [])
        return raised

    def _wake(self) -> None:
        for callback in self._watchers:
            callback()


def _before_the_cut(error: DownloadError | None) -> DownloadError | None:
    """An attempt's error as the limit reads it when the attempt started before the latest cut: an
    overload then was the old limit's, whose refusals keep arriving for a round trip after the cut (TCP
    likewise cuts its window once per round trip, not once per loss); it counts as an attempt that ended,
    not as overload."""
    return None if is_overload(error) else error


def _averaged(mean: float | None, sample: float) -> float:
    """An exponentially weighted mean (weight `defaults.AUTO_ATTEMPT_WEIGHT`) with a new sample; the first
    sample is the mean, rather than a twentieth of it."""
    return sample if mean is None else mean + defaults.AUTO_ATTEMPT_WEIGHT * (sample - mean)


class FixedConcurrency(ConcurrencyLimit):
    """`download_concurrency`, from start to end."""

    def __init__(self, limit: int, clock: Clock = time.monotonic) -> None:
        super().__init__(limit, limit, clock)


class _Phase(enum.Enum):
    GROW = "grow"
    """Doubling the limit while goodput grows (BBR's startup)."""
    REFINE = "refine"
    """Narrowing the bracket between the largest limit short of the plateau and the smallest on it."""
    HOLD = "hold"
    """At the limit found; a probe above or below it every `defaults.AUTO_PROBE_EVERY` windows."""
    PROBE = "probe"
    """One window at a limit beside the one held, then back, or on from there."""


@dataclass
class _Window:
    """What one window of the adaptive limit saw: bytes, events, attempts ended (overloaded), and the
    integral of downloads in flight over time, for the mean of them (`busy`). It counts once it `settled`:
    a new limit's downloads take a round trip or more to start (and TCP's slow start), and bytes counted
    before would understate the new limit's goodput."""

    start: float
    settled: bool = False
    bytes: int = 0
    events: int = 0
    ended: int = 0
    overloads: int = 0
    in_flight_seconds: float = 0.0

    def goodput(self, now: float) -> float:
        return self.bytes / max(now - self.start, 1e-9)

    def busy(self, now: float) -> float:
        """Downloads in flight on average over the window."""
        return self.in_flight_seconds / max(now - self.start, 1e-9)


class AdaptiveConcurrency(ConcurrencyLimit):
    """The limit found while the fetch runs, from `start` up to `maximum` (the module says how)."""

    def __init__(self, maximum: int, start: int = defaults.AUTO_START, clock: Clock = time.monotonic) -> None:
        super().__init__(max(1, min(start, maximum)), maximum, clock)
        self._in_flight = 0
        self._stamp = self._begun
        self._window = _Window(self._begun)
        self._goodput: dict[int, float] = {}
        """The latest goodput of each limit that ran a whole window without overload or running short."""
        self._phase = _Phase.GROW
        self._held = self._limit
        self._windows_held = 0
        self._probe_up = True
        self._ceiling: int | None = None
        self._ceiling_windows = 0
        self._memory = defaults.AUTO_OVERLOAD_MEMORY
        self._starts: collections.deque[float] = collections.deque()
        self._attempt_seconds: float | None = None
        """How long an attempt takes, on average lately (an exponentially weighted mean)."""
        self._round_trip: float | None = None
        """How long an attempt waits for its first byte, on average lately: a round trip or two (a new
        connection's handshake, the request, the server's time to answer it), which a new limit's downloads
        wait before they bring anything."""
        self._overloaded_at: int | None = None
        """The latest limit that overloaded, remembered past its ceiling's end: a clean window there resets
        the memory."""

    def transferred(self, size: int) -> None:
        with self._lock:
            now = self._clock()
            if (waited := self._first_byte(now)) is not None:
                self._round_trip = _averaged(self._round_trip, waited)
            self._window.bytes += size
            self._window.events += 1
            self._warm_up(now)
            raised = self._maybe_decide(now)
        if raised:
            self._wake()

    def _started(self, now: float) -> None:
        self._account(now)
        self._in_flight += 1
        self._starts.append(now)

    def _left(self, now: float) -> None:
        self._account(now)
        self._in_flight -= 1

    def _next_window(self, now: float, settled: bool) -> None:
        """Close the window's count of downloads in flight and start the next one: `settled` when the limit
        did not change, so that it counts at once (`_warm_up`)."""
        self._account(now)
        self._window = _Window(now, settled=settled)

    def _account(self, now: float) -> None:
        self._window.in_flight_seconds += self._in_flight * (now - self._stamp)
        self._stamp = now

    def _warm_up(self, now: float) -> None:
        """Start counting the window once the new limit is what runs: the downloads it added bring bytes
        (`defaults.AUTO_SETTLE_ROUND_TRIPS` times the wait for a first byte, at least `defaults.AUTO_SETTLE`
        seconds, and as many events as the limit, one a slot on average), and those beyond a lower limit
        ended. Counted sooner, a higher limit reads as no gain and a lower one as no loss: on the `slow`
        profile a step from 8 to 16 read as flat, and 4 as good as 8."""
        window = self._window
        if window.settled or self._in_flight > self._limit or window.events < self._limit:
            return
        round_trip = self._round_trip or 0.0
        if now - window.start >= max(defaults.AUTO_SETTLE, defaults.AUTO_SETTLE_ROUND_TRIPS * round_trip):
            self._next_window(now, settled=True)

    def _ended(self, now: float, error: DownloadError | None) -> bool:
        if self._starts:  # attempts end in about the order they start: close enough for a mean
            self._attempt_seconds = _averaged(self._attempt_seconds, now - self._starts.popleft())
        window = self._window
        window.ended += 1
        window.events += 1
        if is_overload(error):
            window.overloads += 1
            if window.overloads >= 2 and window.overloads > defaults.AUTO_OVERLOAD_SHARE * window.ended:
                return self._overloaded(now)
        self._warm_up(now)
        return self._maybe_decide(now)

    def _maybe_decide(self, now: float) -> bool:
        """Close the window once it is long enough (`_long_enough`), and decide what the next one runs at;
        whether the limit rose."""
        window = self._window
        if not window.settled or not self._long_enough(window, now):
            return False
        self._account(now)
        goodput, short = window.goodput(now), window.busy(now) < defaults.AUTO_BUSY * self._limit
        self._forget_ceiling()
        limit = self._limit
        if not short:  # an app-limited window says nothing about the link
            self._measured(limit, goodput)
            limit = self._decide(goodput)
        self._next_window(now, settled=limit == self._limit)
        return self._set(limit, now, goodput)

    def _long_enough(self, window: _Window, now: float) -> bool:
        """`defaults.AUTO_WINDOW` seconds and `defaults.AUTO_EVENTS_PER_SLOT` events a slot, so that no
        download's chunk boundaries sway its goodput, and `defaults.AUTO_ATTEMPTS_PER_WINDOW` attempts' time
        (up to `defaults.AUTO_WINDOW_MOST` seconds), so that the gaps between a slot's downloads (a round
        trip each, without bytes) weigh as they do in the long run; twice as long once the search has left
        its doubling, whose steps are large, for the finer steps after it."""
        scale = 1 if self._phase is _Phase.GROW else 2
        attempts = min(defaults.AUTO_ATTEMPTS_PER_WINDOW * (self._attempt_seconds or 0.0), defaults.AUTO_WINDOW_MOST)
        return now - window.start >= scale * max(defaults.AUTO_WINDOW, attempts) and (
            window.events >= scale * defaults.AUTO_EVENTS_PER_SLOT * self._limit)

    def _measured(self, limit: int, goodput: float) -> None:
        """Keep a window's goodput: the held limit's averaged with what it had (its windows recur, and one
        is noisy), any other's as measured (the link may have changed since)."""
        held = self._phase is _Phase.HOLD and limit in self._goodput
        self._goodput[limit] = (self._goodput[limit] + goodput) / 2 if held else goodput
        if self._overloaded_at is not None and limit >= self._overloaded_at:
            self._memory, self._overloaded_at = defaults.AUTO_OVERLOAD_MEMORY, None  # the remote takes more now

    def _overloaded(self, now: float) -> bool:
        """Too many of the window's attempts said overload: cut at once, remember the ceiling."""
        limit = self._limit
        self._ceiling = limit if self._ceiling is None else min(self._ceiling, limit)
        self._ceiling_windows = self._memory
        if self._overloaded_at is not None:  # overloaded again after a clean spell: remember twice as long
            self._memory = min(2 * self._memory, defaults.AUTO_OVERLOAD_MEMORY_MOST)
        self._overloaded_at = limit
        self._goodput = {tried: goodput for tried, goodput in self._goodput.items() if tried < self._ceiling}
        clean_below = max(self._goodput, default=1)
        self._next_window(now, settled=False)
        self._phase = _Phase.REFINE
        self._cuts += 1
        self._set(max(1, limit // 2, clean_below), now, None)
        return False

    def _forget_ceiling(self) -> None:
        """A ceiling lasts `defaults.AUTO_OVERLOAD_MEMORY` windows, twice as long each time the remote is
        overloaded again before it runs clean at that limit (as TCP backs its retransmission timer off),
        at most `defaults.AUTO_OVERLOAD_MEMORY_MOST`: a remote's load changes, but probing a fixed limit
        costs a few refusals each time."""
        if self._ceiling is not None:
            self._ceiling_windows -= 1
            if self._ceiling_windows <= 0:
                self._ceiling = None

    def _top(self) -> int:
        """The highest limit worth trying: `maximum`, or below a remembered overload."""
        return self._bound if self._ceiling is None else max(1, min(self._bound, self._ceiling - 1))

    def _decide(self, goodput: float) -> int:
        """The next window's limit, given this one's `goodput` at the current limit."""
        if self._phase is _Phase.GROW:
            return self._grow()
        if self._phase is _Phase.REFINE:
            return self._refine()
        if self._phase is _Phase.PROBE:
            return self._after_probe(goodput)
        return self._hold()

    def _grow(self) -> int:
        """Double while the last step paid, quadruple while it paid in full (goodput grew nearly as much as the
        limit: the link is far from full, and each doubling costs a window); bisect up to a ceiling."""
        limit = self._limit
        below = [tried for tried in self._goodput if tried < limit]
        gain = self._goodput[limit] / max(self._goodput[max(below)], 1e-9) if below else None
        paid = gain is None or gain >= 1 + defaults.AUTO_GROWTH
        linear = gain is not None and gain >= defaults.AUTO_LINEAR * limit / max(below)
        if self._ceiling is not None:
            step = (limit + self._top() + 1) // 2
        else:
            step = min((4 if linear else 2) * limit, self._top())
        if paid and step > limit:
            return step
        self._phase = _Phase.REFINE
        return self._refine()

    def _best(self) -> float:
        """The plateau's goodput: the mean of the goodputs within the tolerance of the highest, whose window
        may have been lucky (the highest of noisy measurements overstates)."""
        top = max(self._goodput.values())
        near = [goodput for goodput in self._goodput.values() if goodput >= (1 - defaults.AUTO_TOLERANCE) * top]
        return sum(near) / len(near)

    def _refine(self) -> int:
        """Narrow the bracket between the largest limit short of the target goodput and the smallest at it
        (`_knee`), and hold the smallest at it once the two are close."""
        target = (1 - defaults.AUTO_TOLERANCE) * self._best()
        on = min(tried for tried, goodput in self._goodput.items() if goodput >= target)
        short = max((tried for tried, goodput in self._goodput.items() if tried < on), default=0)
        if on == max(self._goodput) and on < self._top() and self._ceiling is not None:
            short, on = on, self._top() + 1  # the best is the highest tried: bisect up to the ceiling
            if on - short <= 1:
                return self._hold_at(short)
            return (short + on) // 2
        if on - short <= max(1, math.floor(defaults.AUTO_PRECISION * on)):
            return self._hold_at(on)
        if short == 0:  # nothing short of the plateau measured yet: halve
            return (short + on + 1) // 2
        return self._knee(short, on)

    def _knee(self, short: int, on: int) -> int:
        """The next limit between `short` and `on`: where a link that grows in proportion up to its knee and
        is flat after it has its knee, given their goodputs (the knee is `short` times their ratio): a secant
        step, which lands near the knee at once where bisection would halve its way there, each window at a
        limit far below it (on 2,000 small files behind wan latency, 64 -> 40 -> 52 -> 58 while 64 was the
        best), kept within the bracket's middle half so that a curve of another shape still narrows it."""
        estimate = round(short * self._goodput[on] / max(self._goodput[short], 1e-9))
        quarter = (on - short) // 4
        return min(on - max(1, quarter), max(short + max(1, quarter), estimate))

    def _hold_at(self, limit: int) -> int:
        self._phase, self._held, self._windows_held = _Phase.HOLD, limit, 0
        return limit

    def _hold(self) -> int:
        """Every `defaults.AUTO_PROBE_EVERY` windows, one window a step above, or below, the held limit."""
        self._windows_held += 1
        if self._windows_held < defaults.AUTO_PROBE_EVERY:
            return self._held
        self._windows_held, up = 0, self._probe_up
        self._probe_up = not up
        step = max(1, math.ceil(defaults.AUTO_PROBE_STEP * self._held))
        probe = min(self._held + step, self._top()) if up else max(1, self._held - step)
        if probe == self._held:
            return self._held
        self._phase = _Phase.PROBE
        return probe

    def settled(self) -> int:
        """The limit the search holds (a probe beside it aside), once it found one; before, the limit the
        fetch spent the most time at."""
        with self._lock:
            found = self._phase in (_Phase.HOLD, _Phase.PROBE)
            held = self._held
        return held if found else super().settled()

    def _after_probe(self, goodput: float) -> int:
        """Back to the held limit, or on: up if the step above paid, down if the step below cost nothing."""
        held, probe = self._held, self._limit
        before = self._goodput.get(held, 0.0)
        if probe > held and goodput >= (1 + defaults.AUTO_PROBE_GAIN) * before:
            self._phase = _Phase.GROW
            return self._grow()
        if probe < held and goodput >= (1 - defaults.AUTO_TOLERANCE) * before:
            return self._hold_at(probe)
        self._phase = _Phase.HOLD
        return held
