"""pytest-benchmark: the latency of an ordinary API request, alone, beside 150 stalled clients
(tests/pulp_sync/stalled_clients.py's STALLS), and beside the whole hostile crowd of
tests/pulp_sync/test_slow_clients.py (the stalled ones, 80 that never read their answers, 100 that send all
but the end of a large body, 1,100 idle connections reopened as they expire), with the production deadlines.

Not part of the default test command (pyproject ignores tests/benchmarks). Run with

    pytest tests/benchmarks/test_slow_clients_benchmark.py

Each round is one GET of the Pulp dialect's repository list with the admin's token, from 127.0.0.2 over a
kept-alive connection, on a sqlite stack with one API worker (the hostile clients come from 127.0.0.1), one
round every PACE seconds. A thread keeps the clients going throughout: each one the server ends is opened
again at once, as an attacker would (those that never read, or send nearly all of a large body, are
held rather than reopened, so that this machine's two cores are not spent on the attack). p50 and p99 of
the rounds, in milliseconds, are in each benchmark's extra_info.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
import urllib3

import pulp_sync
from tests.pulp_sync.stalled_clients import ORDINARY, OTHER_ADDRESS, STALLS, Kind, Stall, hostile

if TYPE_CHECKING:
    from tests.pulp_sync.test_api import Api

ROUNDS = 700
PACE = 0.05
"""Seconds between two rounds: the rounds span 35 s, past the header deadline (10 s), so the stall's
first clients are ended and opened again while they run."""


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[Api, str]]:
    """A sqlite stack with the default deadlines and a distributed 2 MiB file. Django starts first, on a home of
    its own, as tests/pulp_sync/conftest.py has it for the tests: tests.pulp_sync.test_api imports the models."""
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory(prefix="pulp-sync-bench-") as folder:
        patch.setenv("PULP_SYNC_HOME", str(Path(folder) / "home"))
        pulp_sync.setup()
        from tests.pulp_sync.test_api import distribute, running_api
        from tests.pulp_sync.test_slow_clients import DISTRIBUTED_BYTES, OPEN_FILES, raise_open_files

        raise_open_files(OPEN_FILES)
        with running_api("sqlite", Path(folder), workers=1) as stack:
            yield stack, distribute(stack, "big.bin", bytes(DISTRIBUTED_BYTES))


@contextmanager
def stalled(api: Api, kinds: tuple[Kind, ...]) -> Iterator[list[Stall]]:
    """`kinds` of clients kept so by a thread until the block ends: the stalled and idle ones reopened as the
    server ends them, those that send a request whole (never reading, or nearly all of a body) held."""
    stop = threading.Event()
    with ExitStack() as stack:
        reopened = [kind in STALLS or kind.name == "idle" for kind in kinds]
        stalls = [stack.enter_context(closing(Stall(api.base, api.token, (kind,), reopen=again)))
                  for kind, again in zip(kinds, reopened, strict=True)]

        def keep() -> None:
            while not stop.is_set():
                for stall in stalls:
                    stall.pump(0.1)

        keeper = threading.Thread(target=keep, name="hostile clients")
        keeper.start()
        try:
            yield stalls
        finally:
            stop.set()
            keeper.join()


def _measure(benchmark: Any, api: Api) -> dict[str, float]:
    """ROUNDS ordinary requests from OTHER_ADDRESS; their p50 and p99 in milliseconds."""
    parts = urlsplit(api.base)
    pool = urllib3.HTTPConnectionPool(parts.hostname or "", parts.port, maxsize=1, timeout=30,
                                      source_address=(OTHER_ADDRESS, 0))
    seconds: list[float] = []

    def ordinary() -> None:
        started = time.perf_counter()
        answer = pool.request("GET", ORDINARY, headers={"Authorization": f"Token {api.token}"})
        seconds.append(time.perf_counter() - started)
        assert answer.status == 200, answer.data[:200]

    benchmark.pedantic(ordinary, setup=lambda: time.sleep(PACE), rounds=ROUNDS, iterations=1, warmup_rounds=10)
    cuts = statistics.quantiles(seconds[-ROUNDS:], n=100)
    return {"p50_ms": round(cuts[49] * 1000, 2), "p99_ms": round(cuts[98] * 1000, 2)}


def _beside(benchmark: Any, api: Api, kinds: tuple[Kind, ...]) -> None:
    with stalled(api, kinds) as stalls:
        time.sleep(2)  # the server has accepted them all
        benchmark.extra_info.update(clients=sum(kind.count for kind in kinds), **_measure(benchmark, api))
    benchmark.extra_info["ended_by_the_server"] = sum(
        client.ended is not None for stall in stalls for client in stall.clients
    )


def test_ordinary_request_alone(benchmark: Any, api: tuple[Api, str]) -> None:
    benchmark.extra_info.update(clients=0, **_measure(benchmark, api[0]))


def test_ordinary_request_beside_stalled_clients(benchmark: Any, api: tuple[Api, str]) -> None:
    _beside(benchmark, api[0], STALLS)


def test_ordinary_request_beside_the_hostile_crowd(benchmark: Any, api: tuple[Api, str]) -> None:
    from tests.pulp_sync.test_slow_clients import IDLE_CONNECTIONS

    _beside(benchmark, api[0], hostile(api[1], IDLE_CONNECTIONS))
