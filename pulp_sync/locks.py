"""Named locks that every process sharing the database agrees on, on whatever host it runs.

Two uses: the schema (one process migrates, any number start at once) and a repository (one sync at a
time builds its next version). PostgreSQL's advisory locks and MariaDB/MySQL's GET_LOCK are held by
the database session, so a process that dies or loses its connection lets go of them, and processes on
other hosts see them. sqlite has no such lock; its database is one file on one host, so an flock on a
file beside it does the same for every process that opens that file.

A lock is taken by trying without waiting, again and again until a deadline: the same on every
database, and it lets the caller say once that it waits (the servers' blocking forms cannot), and
lets whoever called the code that waits end the wait (`interrupting`: a task canceled while its sync
waits for its repository, on a worker that cannot kill the sync).
"""

from __future__ import annotations

import fcntl
import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO

from django.conf import settings
from django.db import connection

from pulp_sync import defaults

__all__ = ["held", "interrupting", "LockTimeout"]

_INTERRUPT: ContextVar[Callable[[], None] | None] = ContextVar("pulp_sync_lock_interrupt", default=None)
"""What every wait for a lock in this context calls before each pause (see `interrupting`)."""


class LockTimeout(Exception):
    """The lock was still held by another process when the wait ran out."""


@contextmanager
def held(name: str, wait: float | None, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the lock `name` for the block, waiting up to `wait` seconds for it (None: as long as it
    takes); `waiting` is called once if it must wait, and the check of `interrupting` before each pause.
    LockTimeout when the wait runs out."""
    deadline = None if wait is None else time.monotonic() + wait
    lock = _lock_for(name)
    pause = defaults.LOCK_POLL_SECONDS[0]
    interrupt = _INTERRUPT.get()
    while not lock.take():
        if pause == defaults.LOCK_POLL_SECONDS[0] and waiting is not None:
            waiting()
        if interrupt is not None:
            interrupt()
        if deadline is not None and time.monotonic() + pause > deadline:
            raise LockTimeout(f"{name} is still held by another process after {wait:g} s")
        time.sleep(pause)
        pause = min(2 * pause, defaults.LOCK_POLL_SECONDS[1])
    try:
        yield
    finally:
        lock.give()


@contextmanager
def interrupting(check: Callable[[], None]) -> Iterator[None]:
    """Call `check` before each pause of every wait for a lock in the block (this thread, this context):
    it raises to end the wait, and the exception leaves `held` without the lock. For a caller that
    knows why a wait should end, above code that waits and knows nothing of it (a task and its sync)."""
    token = _INTERRUPT.set(check)
    try:
        yield
    finally:
        _INTERRUPT.reset(token)


class _ServerLock:
    """A lock the database server holds for this connection's session."""

    _SQL = {
        "postgresql": ("SELECT pg_try_advisory_lock(%s)", "SELECT pg_advisory_unlock(%s)"),
        "mysql": ("SELECT GET_LOCK(%s, 0)", "SELECT RELEASE_LOCK(%s)"),
    }

    def __init__(self, name: str) -> None:
        digest = hashlib.sha256(name.encode()).digest()
        # PostgreSQL's advisory locks take a bigint; MariaDB's names are at most 64 characters
        self._key: int | str = (
            int.from_bytes(digest[:8], "big", signed=True) if connection.vendor == "postgresql"
            else f"pulp_sync:{digest.hex()[:48]}"
        )
        self._take, self._give = self._SQL[connection.vendor]

    def take(self) -> bool:
        with connection.cursor() as cursor:
            cursor.execute(self._take, [self._key])
            return bool(cursor.fetchone()[0])

    def give(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(self._give, [self._key])


class _FileLock:
    """An flock on a file in a folder beside the sqlite database (or in PULP_SYNC_HOME)."""

    def __init__(self, name: str) -> None:
        database = str(settings.DATABASES["default"].get("NAME") or "")
        folder = Path(f"{database}.locks") if database.startswith("/") else Path(settings.PULP_SYNC_HOME) / "locks"
        folder.mkdir(parents=True, exist_ok=True)
        self._path = folder / f"{hashlib.sha256(name.encode()).hexdigest()[:32]}.lock"
        self._file: IO[str] | None = None

    def take(self) -> bool:
        lock = self._path.open("a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            return False
        self._file = lock
        return True

    def give(self) -> None:
        assert self._file is not None, "give() after take()"
        self._file.close()  # closing the only descriptor of the open file lets go of its flock
        self._file = None


def _lock_for(name: str) -> _ServerLock | _FileLock:
    return _ServerLock(name) if connection.vendor in _ServerLock._SQL else _FileLock(name)
