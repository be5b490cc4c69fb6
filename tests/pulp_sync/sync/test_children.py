"""pulp_sync.sync.children: a forked child ends with its exit code, with its parent, or by terminate."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from pulp_sync.sync.children import fork_child, terminate

GRACE = 0.5


def exit_code(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def deaf_to_sigterm(ready: int) -> Callable[[], int]:
    """A child's work that ignores SIGTERM, says so on `ready`, then sleeps."""
    def run() -> int:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.write(ready, b"x")
        time.sleep(60)
        return 0

    return run


def sleeps() -> int:
    time.sleep(60)
    return 0


def fails() -> int:
    raise RuntimeError("the work failed")


def test_a_child_ends_with_its_work_s_code_or_1_if_it_raised() -> None:
    for run, code in ((lambda: 7, 7), (fails, 1)):
        pid, to_child = fork_child(run, GRACE)
        assert exit_code(pid) == code
        os.close(to_child)


def test_a_child_stops_as_sigterm_stops_it_when_its_parent_lets_go() -> None:
    pid, to_child = fork_child(sleeps, GRACE)
    os.close(to_child)
    assert exit_code(pid) == 128 + signal.SIGTERM


def test_a_child_deaf_to_sigterm_ends_a_grace_after_its_parent_lets_go() -> None:
    ready, said = os.pipe()
    pid, to_child = fork_child(deaf_to_sigterm(said), GRACE)
    assert os.read(ready, 1) == b"x"
    started = time.monotonic()
    os.close(to_child)
    assert exit_code(pid) == 1
    assert time.monotonic() - started >= GRACE
    for descriptor in (ready, said):
        os.close(descriptor)


def test_terminate_kills_a_child_deaf_to_sigterm_after_the_grace_and_reaps_it() -> None:
    ready, said = os.pipe()
    pid, to_child = fork_child(deaf_to_sigterm(said), 60)
    assert os.read(ready, 1) == b"x"
    started = time.monotonic()
    terminate(pid, GRACE)
    assert time.monotonic() - started >= GRACE
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    for descriptor in (to_child, ready, said):
        os.close(descriptor)
