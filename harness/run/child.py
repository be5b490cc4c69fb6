"""One run = one child process: its output, its wall time and the kernel's rusage for it alone.

Peak RSS is not taken from rusage: on Linux `ru_maxrss` survives exec, so a child forked from the
harness (150 MB with scipy and matplotlib loaded) reports at least the harness's own size even if it
is `/bin/true`. Each process's own high-water mark, VmHWM in /proc/<pid>/status, starts afresh at
exec; the harness samples it for the child and its descendants every few milliseconds while they
run (HighWater), which misses only growth in a process's last few milliseconds.
"""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = ["ChildRun", "HighWater", "run_child", "last_words", "descendants"]


@dataclass(frozen=True)
class ChildRun:
    """What one child did; rusage figures are the child's own (os.wait4), not summed over siblings."""

    command: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    wall_seconds: float
    user_seconds: float
    system_seconds: float
    peak_rss_mb: float
    voluntary_switches: int
    involuntary_switches: int


def last_words(stderr: str, returncode: int) -> str:
    """What a failed child said last (its last line on stderr), or its exit status when it said nothing:
    the reason an error message quotes."""
    lines = stderr.strip().splitlines()
    return lines[-1] if lines else f"exit status {returncode}"


def run_child(
    command: Sequence[str], env: Mapping[str, str] | None = None, timeout: float | None = None, cwd: Path | None = None
) -> ChildRun:
    """Run `command` (in `cwd`) to its end and measure it; output goes through temp files so pipes never block."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        child = subprocess.Popen(
            list(command), env=dict(env) if env is not None else None, stdout=out, stderr=err, cwd=cwd
        )
        high_water = HighWater()
        status, usage = _wait4(child, timeout, high_water)
        wall = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        return ChildRun(
            command=tuple(command),
            returncode=os.waitstatus_to_exitcode(status),
            stdout=out.read(),
            stderr=err.read(),
            wall_seconds=wall,
            user_seconds=usage.ru_utime,
            system_seconds=usage.ru_stime,
            peak_rss_mb=high_water.peak_mb(usage),
            voluntary_switches=usage.ru_nvcsw,
            involuntary_switches=usage.ru_nivcsw,
        )


class HighWater:
    """The largest VmHWM (peak RSS of one process) seen in a process tree; see the module's docstring."""

    def __init__(self) -> None:
        self.kib = 0

    def sample(self, pid: int) -> None:
        """Look at `pid` and its descendants now; processes that are gone are skipped."""
        for process in _tree(pid):
            self.kib = max(self.kib, _vm_hwm_kib(process))

    def peak_mb(self, usage: resource.struct_rusage) -> float:
        """The peak seen, in MB (MiB); a child too short-lived to be sampled falls back to `ru_maxrss`."""
        return (self.kib or usage.ru_maxrss) / 1024


def descendants(pid: int) -> list[int]:
    """The processes below `pid` (children, theirs, ...), as the kernel lists them now."""
    return _tree(pid)[1:]


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants: from /proc/<pid>/task/<tid>/children where the kernel has those files
    (CONFIG_PROC_CHILDREN; cheap enough to sample every few milliseconds while a run goes on), else from
    psutil, which reads every process's parent for each call."""
    if not _HAS_CHILDREN_FILES:
        try:
            return [pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))]
        except psutil.Error:
            return [pid]
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(_children_files(current))
    return found


def _children_files(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as children:
                found.extend(int(child) for child in children.read().split())
    except OSError:
        pass
    return found


_HAS_CHILDREN_FILES = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _vm_hwm_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _wait4(
    child: subprocess.Popen[bytes], timeout: float | None, high_water: HighWater
) -> tuple[int, resource.struct_rusage]:
    """Reap the child with wait4 (Popen.wait would lose its rusage), sampling its peak RSS until then;
    kill it past `timeout`."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        high_water.sample(child.pid)
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            return status, usage
        if deadline is not None and time.monotonic() > deadline:
            child.kill()
            deadline = None
        time.sleep(0.01)

