"""Servers in child processes: start one in a process group of its own, wait until it is ready, stop the
group. nginx and the fixture server (fixtures/), `pulp-sync api`, pulpcore and the RQ workers (harness/)
are all started, awaited and stopped here, with one set of rules:

- a server leads a session of its own (`start_new_session`), so that stopping its group also stops
  what it forked (gunicorn's and nginx's workers, an RQ worker's work horse);
- its output goes to a log the caller keeps, which an error quotes (`tail`);
- readiness is a check the caller gives (a line printed, an HTTP answer, a worker registered), polled
  until it holds, the server exits, or the caller's bound passes; each failure is one sentence, raised
  as the caller's own error type;
- stopping is SIGTERM to every group, then SIGKILL to those left after a patience;
- a server that must not outlive the process that started it, even a SIGKILLed one (`pulp-sync api`'s
  nginx and gunicorn), is sent SIGTERM by the kernel when its parent dies (Linux's PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import IO, TypeVar

from pulp_base import defaults

__all__ = ["ServerFailed", "start", "wait_until", "stop_groups", "tail", "free_port"]

T = TypeVar("T")
Failure = Callable[[str], Exception]
"""Makes the caller's error from a sentence (e.g. `PulpcoreError`), so each package keeps its own types."""


class ServerFailed(RuntimeError):
    """A server did not come up (it exited, or was not ready in time); the message quotes its output.
    The failure of `wait_until` for callers without an error type of their own (the fixture servers)."""


def start(command: Sequence[str], log: IO[bytes] | int, *, env: Mapping[str, str] | None = None,
          cwd: Path | None = None, dies_with_parent: bool = False) -> subprocess.Popen[bytes]:
    """`command` as the leader of a new session, reading nothing, its output (both streams) in `log` (a file,
    or a descriptor such as this process's stderr). With `dies_with_parent`, it gets SIGTERM when this
    process ends, however it ends."""
    parent = os.getpid()
    return subprocess.Popen(list(command), env=None if env is None else dict(env), cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=partial(_die_with, parent) if dies_with_parent else None)


def wait_until(ready: Callable[[], T | None], processes: Mapping[str, subprocess.Popen[bytes]], *,
               within: float, what: str, output: Callable[[], str], failure: Failure,
               interval: float = defaults.POLL_SECONDS) -> T:
    """Poll `ready()` until it gives a value other than None, and return it.

    Raises `failure(sentence)` when one of `processes` (by name) exits first, or when `within` seconds
    pass; the sentence says which and ends with `output()`, what the servers printed."""
    deadline = time.monotonic() + within
    while True:
        for name, process in processes.items():
            if process.poll() is not None:
                raise failure(f"{name} exited with status {process.returncode} at start; its output: {output()}")
        value = ready()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise failure(f"{what} within {within:g} s (is the machine overloaded?); its output: {output()}")
        time.sleep(interval)


def stop_groups(processes: Sequence[subprocess.Popen[bytes]], patience: float) -> None:
    """Stop servers started each as the leader of its own process group (`start`): SIGTERM to every
    group, SIGKILL to those left after `patience` seconds; returns once each leader is reaped and its
    group is gone (or after another bounded wait, for a group whose reaper is slow)."""
    for process in processes:
        _signal_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + patience
    for process in processes:
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.poll() is None or _group_alive(process.pid):
            _signal_group(process.pid, signal.SIGKILL)
        process.wait()
    deadline = time.monotonic() + patience
    while any(_group_alive(process.pid) for process in processes) and time.monotonic() < deadline:
        time.sleep(defaults.POLL_SECONDS)


def tail(log: IO[bytes] | Path | str, lines: int = defaults.TAIL_LINES) -> str:
    """The last `lines` non-blank lines of a log (an open file, a file, or its text), on one line
    (`a | b | c`), for an error message."""
    if isinstance(log, Path):
        try:
            text = log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    elif isinstance(log, str):
        text = log
    else:
        log.seek(0)
        text = log.read().decode(errors="replace")
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "(no output)"


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on now on `host`; the server binds it a moment later, a race its error
    would show (callers that can retry with another port do)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


_PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal a process gets when the thread that forked it ends."""


def _die_with(parent: int) -> None:
    """In the child, before exec: ask for SIGTERM when the parent dies, and end at once if it already has
    (it may have died between the fork and this call). The setting survives the exec."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(1)


def _signal_group(group: int, signum: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
