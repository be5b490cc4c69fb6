"""The machine's state around an experiment (harness/run/machine.py): real processes, a real busy one."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from harness.results.warning import Kind
from harness.run.machine import (
    StateFolderBusy,
    Watch,
    filesystem_of,
    installed_packages,
    snapshot,
    state_lock,
    warnings_for,
)

SPIN = [sys.executable, "-c", "while True: pass"]


def spinner(command: list[str] = SPIN) -> subprocess.Popen[bytes]:
    """A process that spins, ahead of the machine's other work where it may be (root lowers its nice
    value), so that however busy the machine, it is among the busiest and above the warning's bound."""
    process = subprocess.Popen(command)
    with suppress(PermissionError):
        os.setpriority(os.PRIO_PROCESS, process.pid, -10)
    return process


def test_a_busy_process_is_named_and_warned_about() -> None:
    spinning = spinner()
    try:
        state = snapshot()
    finally:
        spinning.kill()
        spinning.wait()
    busy = {p["pid"]: p for p in state["busiest"]}
    assert spinning.pid in busy and busy[spinning.pid]["cpu_share"] > 0.1, state["busiest"]
    assert state["swap_used_mb"] >= 0 and len(state["load_average"]) == 3
    environment = {"machine": {"cpu_count": os.cpu_count()}, "machine_state": {"before": state}}
    assert any(warning.kind is Kind.BUSY_PROCESS and f"(pid {spinning.pid})" in warning.text
               for warning in warnings_for(environment)), "named, as the busiest or among the others"


def test_during_the_runs_another_busy_process_is_counted_and_the_experiments_own_are_not() -> None:
    """`root` stands for the harness: its child spins as a run would, and is the experiment's own work;
    a spinner outside its tree, started after the watch began, is another process."""
    experiment = spinner(["sh", "-c", f"exec {SPIN[0]} -c 'while True: pass'"])
    try:
        with Watch(root=experiment.pid, interval=0.2) as watch:
            other = spinner()
            try:
                time.sleep(1.5)
            finally:
                other.kill()
                other.wait()
            time.sleep(0.5)
    finally:
        experiment.kill()
        experiment.wait()
    during = watch.summary()
    busy = {p["pid"]: p for p in during["busiest"]}
    assert other.pid in busy and 0.1 < busy[other.pid]["cpu_share"] < 1.1, during
    assert experiment.pid not in busy, during
    assert during["samples"] >= 5 and during["seconds"] >= 2.0 and during["load_average_max"] is not None
    environment = {"machine": {"cpu_count": os.cpu_count()}, "machine_state": {"during": during}}
    assert any(w.subject == "during the runs" and f"(pid {other.pid})" in w.text and "on average" in w.text
               for w in warnings_for(environment)), warnings_for(environment)


def test_an_unsteady_governor_swap_and_load_are_warned_about() -> None:
    state = {"load_average": [3.5, 1.0, 0.5], "busiest": [], "governors": ["powersave", "powersave"],
             "swap_used_mb": 120.0}
    found = warnings_for({"machine": {"cpu_count": 2}, "machine_state": {"before": state}})
    assert [w.kind for w in found] == [Kind.LOAD, Kind.SWAP, Kind.GOVERNOR], found
    assert "load average 3.50 on 2 CPUs" in found[0].text and "120 MB of swap" in found[1].text
    assert "governor powersave" in found[2].text
    quiet = {"load_average": [0.1, 0.1, 0.1], "busiest": [], "governors": ["performance"], "swap_used_mb": 0.0}
    assert warnings_for({"machine": {"cpu_count": 2}, "machine_state": {"before": quiet}}) == []


def test_other_busy_processes_fold_into_one_warning_per_phase_naming_the_worst_first() -> None:
    busiest = [{"pid": 7, "name": "backup", "cpu_share": 0.3}, {"pid": 9, "name": "indexer", "cpu_share": 0.9},
               {"pid": 5, "name": "shell", "cpu_share": 0.05}]
    state = {"load_average": [0.1, 0.1, 0.1], "busiest": busiest, "governors": [], "swap_used_mb": 0.0}
    environment = {"machine": {"cpu_count": 2}, "machine_state": {"before": state, "after": state}}
    found = warnings_for(environment)
    assert [(w.kind, w.subject) for w in found] == [(Kind.BUSY_PROCESS, "before the runs"),
                                                     (Kind.BUSY_PROCESS, "after the runs")]
    assert found[0].text == "indexer (pid 9) used 90% of a CPU; also backup (pid 7) 30%", found


def test_every_installed_package_is_listed() -> None:
    packages = installed_packages()
    assert {"pulp-sync", "scipy", "pytest", "Django"} <= set(packages) and len(packages) > 40


def test_the_filesystem_of_a_path_is_its_deepest_mount(tmp_path: Path) -> None:
    found = filesystem_of(tmp_path / "not" / "made" / "yet")
    assert found is not None and found["type"] and Path(found["mount_point"]) in (tmp_path.parents or [tmp_path])
    assert filesystem_of(Path("/proc/self"))["type"] == "proc"


def _hold(state_dir: str, ready: Any, done: Any) -> None:
    """Hold the state folder in another process until told (`ready` and `done` are multiprocessing Events)."""
    with state_lock(Path(state_dir)):
        ready.set()
        done.wait(10)


def test_two_experiments_cannot_share_a_state_folder(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    ready, done = context.Event(), context.Event()
    holder = context.Process(target=_hold, args=(str(tmp_path), ready, done))
    holder.start()
    try:
        assert ready.wait(30)
        with pytest.raises(StateFolderBusy, match=f"in use by pid {holder.pid}"):
            with state_lock(tmp_path):
                pass
    finally:
        done.set()
        holder.join(10)
    with state_lock(tmp_path):
        pass
