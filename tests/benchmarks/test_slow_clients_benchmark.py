"""pytest-benchmark: the latency of an ordinary API request, alone and beside 150 stalled clients
(tests/pulp_sync/stalled_clients.py's STALLS), with the production deadlines.

Not part of the default test command (pyproject ignores tests/benchmarks). Run with

    pytest tests/benchmarks/test_slow_clients_benchmark.py

Each round is one GET of the Pulp dialect's repository list with the admin's token, over a kept-alive
connection, on a sqlite stack with two API workers, one round every PACE seconds. A thread keeps 150
clients stalled throughout: each one the server ends (408 after its deadline) is opened again at once,
as an attacker would. p50 and p99 of the rounds, in milliseconds, are in each benchmark's extra_info.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import pulp_sync
from tests.pulp_sync.stalled_clients import ORDINARY, STALLS, Stall

if TYPE_CHECKING:
    from tests.pulp_sync.test_api import Api

ROUNDS = 700
PACE = 0.05
"""Seconds between two rounds: the rounds span 35 s, past the header deadline (10 s), so the stall's
first clients are ended and opened again while they run."""


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    """A sqlite stack with the default deadlines. Django starts first, on a home of its own, as
    tests/pulp_sync/conftest.py has it for the tests: tests.pulp_sync.test_api imports the models."""
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory(prefix="pulp-sync-bench-") as folder:
        patch.setenv("PULP_SYNC_HOME", str(Path(folder) / "home"))
        pulp_sync.setup()
        from tests.pulp_sync.test_api import running_api

        with running_api("sqlite", Path(folder)) as stack:
            yield stack


@contextmanager
def stalled(api: Api) -> Iterator[Stall]:
    """150 stalled clients, kept so by a thread until the block ends."""
    stop = threading.Event()
    with closing(Stall(api.base, api.token, STALLS, reopen=True)) as stall:

        def keep() -> None:
            while not stop.is_set():
                stall.pump(0.5)

        keeper = threading.Thread(target=keep, name="stalled clients")
        keeper.start()
        try:
            yield stall
        finally:
            stop.set()
            keeper.join()


def _measure(benchmark: Any, api: Api) -> dict[str, float]:
    """ROUNDS ordinary requests; their p50 and p99 in milliseconds."""
    seconds: list[float] = []

    def ordinary() -> None:
        started = time.perf_counter()
        answer = api.call("GET", ORDINARY)
        seconds.append(time.perf_counter() - started)
        assert answer.status == 200, answer.text

    benchmark.pedantic(ordinary, setup=lambda: time.sleep(PACE), rounds=ROUNDS, iterations=1, warmup_rounds=10)
    cuts = statistics.quantiles(seconds[-ROUNDS:], n=100)
    return {"p50_ms": round(cuts[49] * 1000, 2), "p99_ms": round(cuts[98] * 1000, 2)}


def test_ordinary_request_alone(benchmark: Any, api: Api) -> None:
    benchmark.extra_info.update(stalled=0, **_measure(benchmark, api))


def test_ordinary_request_beside_stalled_clients(benchmark: Any, api: Api) -> None:
    with stalled(api) as stall:
        time.sleep(1)  # the server has accepted them all
        benchmark.extra_info.update(stalled=sum(kind.count for kind in STALLS), **_measure(benchmark, api))
    benchmark.extra_info["stalled_ended_by_the_server"] = sum(client.ended is not None for client in stall.clients)
