"""Named locks (pulp_sync/locks.py) and retried transactions (database.retried), in this process on sqlite.

Threads stand for processes: each has its own database connection and its own open lock file, as two
processes would. The locks of PostgreSQL and MariaDB are run by test_concurrent_syncs, process against
process, on the real servers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import OperationalError, transaction

from pulp_sync import database, locks


@contextmanager
def _held_elsewhere(name: str) -> Iterator[threading.Event]:
    """`name` held by another thread (its own connection and lock file) until the Event it yields is set,
    or the block ends."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with locks.held(name, wait=None):
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(10)
    try:
        yield release
    finally:
        release.set()
        thread.join()


def test_a_second_holder_waits_says_so_once_and_gets_the_lock_when_it_is_free(db: Path) -> None:
    told: list[str] = []
    with _held_elsewhere("repository:1") as release:
        threading.Timer(0.5, release.set).start()
        started = time.monotonic()
        with locks.held("repository:1", wait=10, waiting=lambda: told.append("waiting")):
            waited = time.monotonic() - started
    assert told == ["waiting"] and 0.4 < waited < 3


def test_the_wait_is_bounded_and_other_names_are_free(db: Path) -> None:
    with _held_elsewhere("repository:1"):
        started = time.monotonic()
        with pytest.raises(locks.LockTimeout, match="still held by another process after 0.3 s"):
            with locks.held("repository:1", wait=0.3):
                pass
        assert time.monotonic() - started < 1.5
        with locks.held("repository:2", wait=0):
            pass
    with locks.held("repository:1", wait=0):
        pass


def _lost(message: str = "database is locked") -> OperationalError:
    return OperationalError(message)


def test_a_lost_lock_is_tried_again_and_the_last_error_says_how_often(db: Path) -> None:
    calls = []

    def twice_then_done() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise _lost()
        return "done"

    assert database.retried(twice_then_done) == "done" and len(calls) == 3

    calls.clear()

    def always() -> None:
        calls.append(1)
        raise _lost()

    with pytest.raises(OperationalError) as raised:
        database.retried(always, tries=3)
    assert len(calls) == 3 and "tried 3 times" in database.explain(raised.value)
    assert database.explain(raised.value).startswith("the database gave up on a lock")


def test_other_errors_and_errors_inside_a_transaction_are_not_retried(db: Path) -> None:
    calls = []

    def broken() -> None:
        calls.append(1)
        raise _lost("no such table: elsewhere")

    with pytest.raises(OperationalError):
        database.retried(broken)
    assert len(calls) == 1

    def locked() -> None:
        calls.append(1)
        raise _lost()

    calls.clear()
    with pytest.raises(OperationalError), transaction.atomic():
        database.retried(locked)
    assert len(calls) == 1, "the rollback undid the outer transaction too: only its owner may run it again"


def test_a_wait_ends_when_the_interrupting_check_raises(db: Path) -> None:
    """A canceled task's check (task_progress.TaskProgress.check) ends its sync's wait for the repository."""
    checks: list[float] = []

    def check() -> None:
        checks.append(time.monotonic())
        if len(checks) == 3:
            raise InterruptedError("canceled")

    with _held_elsewhere("repository:1"):
        with locks.interrupting(check), pytest.raises(InterruptedError, match="canceled"):
            with locks.held("repository:1", wait=None):
                pass
        with pytest.raises(locks.LockTimeout):
            with locks.held("repository:1", wait=0.2):
                pass
    assert len(checks) == 3, "called before each pause, and not outside its block"
