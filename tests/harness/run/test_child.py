"""harness.run.child: a run's figures are the child's own, not inherited from the (big) harness."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from harness.run import child
from harness.run.child import descendants, run_child

GROW = "b = bytearray({mb} * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\nimport time; time.sleep(0.1)"


def test_peak_rss_is_the_childs_own_not_the_parents() -> None:
    ballast = bytearray(200 * 1024 * 1024)
    for index in range(0, len(ballast), 4096):
        ballast[index] = 1
    small = run_child(["sleep", "0.1"])
    grown = run_child([sys.executable, "-c", GROW.format(mb=60)])
    assert small.peak_rss_mb < 20, "ru_maxrss would say ~200 MB: it survives exec"
    assert 60 < grown.peak_rss_mb < 150
    assert len(ballast) > 0


def test_output_status_and_cpu_are_recorded() -> None:
    done = run_child([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert done.user_seconds + done.system_seconds > 0 and done.wall_seconds > 0


def test_a_child_past_its_timeout_is_killed() -> None:
    done = run_child(["sleep", "30"], timeout=0.2)
    assert done.returncode < 0 and done.wall_seconds < 10


@pytest.mark.parametrize("children_files", [True, False], ids=["children-files", "parents-in-stat"])
def test_descendants_are_found_with_or_without_the_kernels_children_files(
    children_files: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kernels without CONFIG_PROC_CHILDREN (and some sandboxes) have no /proc/<pid>/task/<tid>/children."""
    monkeypatch.setattr(child, "_HAS_CHILDREN_FILES", children_files and child._HAS_CHILDREN_FILES)
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        found: list[int] = []
        for _ in range(100):
            found = [pid for pid in descendants(os.getpid()) if pid != shell.pid and pid in descendants(shell.pid)]
            if found:
                break
            time.sleep(0.02)
        assert shell.pid in descendants(os.getpid()) and len(found) == 1, "the shell and its sleep, two levels down"
    finally:
        shell.kill()
        shell.wait()
