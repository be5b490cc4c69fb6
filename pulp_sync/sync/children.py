"""Child processes forked from this one: `fork_child` starts one that ends with its parent, `terminate` ends
one (SIGTERM, then SIGKILL after a grace), reaped either way. The only place pulp-sync forks itself (RQ's
forking worker forks its work horses, gunicorn its workers; worker.py and cli/server.py close the database's
connections before they do: database.close_before_fork).

What a fork copies that the child must not use is put aside:
- the database connections: the child opens its own, and leaves the parent's unclosed
  (database.fresh_connections(forked=True) says why);
- the parent's ends of other pipes (its other children's): closed at once, so each child sees the end of its own;
- threads: only the forking thread exists in the child. Fork before any other thread starts (a progress
  bar's, an engine's), so that no lock one holds is copied held.

A child reads nothing from its parent: the end of the pipe from it says the parent has gone (it died, or gave
up on the child), and the child ends there, so children never outlive the process that forked them. SIGTERM
raises `Stopped` in the child, so that it unwinds through its `finally` clauses (a sync records what it
verified). Ctrl-C on a terminal reaches the whole process group; a child ignores it and ends when its parent
does.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence

from pulp_sync import database

__all__ = ["fork_child", "terminate", "Stopped"]


class Stopped(BaseException):
    """SIGTERM in a forked child: unwind (a BaseException, so no handler of errors takes it for a failure),
    running the `finally` clauses on the way (a sync's records what it downloaded)."""


def fork_child(run: Callable[[], int], grace: float, inherited: Sequence[int] = ()) -> tuple[int, int]:
    """Fork a child that ends with this process: it closes the `inherited` descriptors (the parent's ends of
    other pipes), sets aside the parent's database connections, runs `run` and ends with os._exit and its
    exit code (1 if it raised, 143 if SIGTERM stopped it). When this process goes, the child stops as SIGTERM
    stops it, or at once if that takes longer than `grace` seconds. In the parent: the child's pid, and the
    write end of a pipe whose end (closing it, or this process ending however it ends) stops the child."""
    from_parent, to_child = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        os.close(from_parent)
        return pid, to_child
    code = 1
    try:
        for descriptor in (to_child, *inherited):
            os.close(descriptor)
        with database.fresh_connections(forked=True):
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, _raise_stopped)
            threading.Thread(target=_end_with_parent, args=(from_parent, grace), name="parent", daemon=True).start()
            code = run()
    except Stopped:
        code = 128 + signal.SIGTERM
    except BaseException:  # noqa: BLE001 - a child never returns into the parent's code
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def terminate(pid: int, grace: float) -> None:
    """End a forked child: SIGTERM (a sync's child records what it verified on the way out), then SIGKILL
    after `grace` seconds; reaped either way."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _raise_stopped(signum: int, _frame: object) -> None:
    raise Stopped(signum)


def _end_with_parent(from_parent: int, grace: float) -> None:
    """Wait for the end of the input pipe: the parent has gone or given up. Then stop as SIGTERM stops a
    child (running its `finally` clauses), or end at once if that takes longer than `grace` seconds."""
    while os.read(from_parent, 1024):
        pass
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(grace)
    os._exit(1)
