"""harness.child: a run's figures are the child's own, not inherited from the (big) harness."""

from __future__ import annotations

import sys

from harness.child import run_child

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
