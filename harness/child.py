"""One run = one child process: its output, its wall time and the kernel's rusage for it alone."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

__all__ = ["ChildRun", "run_child"]


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


def run_child(
    command: Sequence[str], env: Mapping[str, str] | None = None, timeout: float | None = None, cwd: Path | None = None
) -> ChildRun:
    """Run `command` (in `cwd`) to its end and measure it; output goes through temp files so pipes never block."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        child = subprocess.Popen(
            list(command), env=dict(env) if env is not None else None, stdout=out, stderr=err, cwd=cwd
        )
        status, usage = _wait4(child, timeout)
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
            peak_rss_mb=usage.ru_maxrss / 1024,  # Linux reports KiB
            voluntary_switches=usage.ru_nvcsw,
            involuntary_switches=usage.ru_nivcsw,
        )


def _wait4(child: subprocess.Popen[bytes], timeout: float | None) -> tuple[int, os.struct_rusage]:
    """Reap the child with wait4 (Popen.wait would lose its rusage); kill it past `timeout`."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG if deadline else 0)
        if pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            return status, usage
        if deadline is not None and time.monotonic() > deadline:
            child.kill()
            deadline = None
        time.sleep(0.01)
