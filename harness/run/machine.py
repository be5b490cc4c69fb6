"""The machine's state around an experiment, as pyperf's `system show` checks it, and what would disturb it.

Timing is only as good as the quiet of the machine it ran on: another busy process, a CPU governor
that lowers the clock while idle, swapping, or a second experiment sharing the state folder each move
the figures more than most differences being measured. The harness records the state before the
first run and after the last (`snapshot`) and, while the runs go on, the CPU of every process that is
not the experiment's own (`Watch`); it keeps the full list of installed packages and the store's
filesystem type, and turns what it found into warnings in the report (`warnings_for`). Processes, load,
swap and mounts come from psutil, which reads them wherever it runs; only the frequency governors are
read from Linux's sysfs, which no portable interface exposes.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from harness import defaults
from harness.errors import HarnessError
from harness.results.warning import FigureWarning, Kind

__all__ = ["snapshot", "Watch", "installed_packages", "filesystem_of", "warnings_for", "state_lock",
           "StateFolderBusy"]

_BUSIEST = 5
_BUSY_SHARE = 0.10
"""A process using more than a tenth of one CPU while the harness watches is worth a warning."""
_LOAD_SHARE = 0.5
"""A load average above half the CPUs before the first run is worth a warning."""
_QUIET_GOVERNORS = ("performance",)
"""Governors that hold the clock steady; others (powersave, ondemand, schedutil) change it with load."""
_SERVICES = ("postgres", "mariadbd", "mysqld", "redis-server")
"""The servers the runs use but did not start: their CPU during the runs is the runs' own work, reported
apart from the other processes and never warned about."""


class StateFolderBusy(HarnessError, RuntimeError):
    """Another experiment holds the state folder: two would reset each other's database and store."""


@dataclass(frozen=True)
class ProcessCpu:
    """One process at one moment: its name, its parent, the CPU seconds it has used (user + system) and
    when it started, which tells a reused pid from the process that had it before."""

    name: str
    parent: int
    cpu_seconds: float
    started: float


def processes() -> dict[int, ProcessCpu]:
    """Every process this user may read, now; those that end meanwhile are left out."""
    found = {}
    for process in psutil.process_iter(["name", "ppid", "cpu_times", "create_time"]):
        info = process.info
        times = info["cpu_times"]
        if times is None or info["create_time"] is None:  # psutil.AccessDenied, reported as None
            continue
        found[process.pid] = ProcessCpu(info["name"] or "?", info["ppid"] or 0, times.user + times.system,
                                        info["create_time"])
    return found


def tree(root: int, found: Mapping[int, ProcessCpu]) -> set[int]:
    """`root` and every process below it among `found` (one reading, so a run's child that has ended since
    cannot pass for another process)."""
    below: dict[int, list[int]] = {}
    for pid, process in found.items():
        below.setdefault(process.parent, []).append(pid)
    members, todo = set(), [root]
    while todo:
        current = todo.pop()
        members.add(current)
        todo.extend(pid for pid in below.get(current, []) if pid not in members)
    return members


def snapshot(exclude: set[int] | None = None) -> dict[str, Any]:
    """The load average, the busiest processes over half a second (other than `exclude` and this
    process), the CPU frequency governors where readable, and swap in use."""
    return {
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_average": list(psutil.getloadavg()),
        "busiest": _busiest({os.getpid(), *(exclude or set())}),
        "governors": _governors(),
        "swap_used_mb": _swap_used_mb(),
    }


class Watch:
    """The machine while the runs go on: every `interval` seconds a daemon thread reads every process once and adds
    each process's CPU since the last reading, apart from `root`'s process tree (the harness, its runs and
    the servers it started), and the 1-minute load average and swap. A process that started and ended
    between two readings is not seen; one that lived across a reading is counted in full.

    `summary()` is results.json's `machine_state.during`: the busiest other processes as a share of one
    CPU over the whole watch, the services the runs use (_SERVICES) likewise by name (all of PostgreSQL's
    backends together; those of connections that lived between two readings are not seen), the highest
    load and swap."""

    def __init__(self, root: int | None = None, interval: float = defaults.MACHINE_WATCH_SECONDS) -> None:
        self._root = os.getpid() if root is None else root
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="machine-watch", daemon=True)
        self._last: dict[int, ProcessCpu] = {}
        self._used: defaultdict[tuple[int, float], float] = defaultdict(float)
        """CPU seconds used by each other process, by (pid, start time): a reused pid is another process."""
        self._names: dict[tuple[int, float], str] = {}
        self._loads: list[float] = []
        self._swap: list[float] = []
        self._started = 0.0
        self._seconds = 0.0

    def __enter__(self) -> Watch:
        self._started = time.monotonic()
        self._last = processes()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._read()
        self._seconds = time.monotonic() - self._started

    def summary(self) -> dict[str, Any]:
        seconds = max(self._seconds, 1e-9)
        others = [{"pid": key[0], "name": self._names[key], "cpu_share": round(used / seconds, 3)}
                  for key, used in sorted(self._used.items(), key=lambda item: -item[1])
                  if used > 0 and self._names[key] not in _SERVICES]
        services: defaultdict[str, float] = defaultdict(float)
        counts: Counter[str] = Counter()
        for key, used in self._used.items():
            if self._names[key] in _SERVICES:
                services[self._names[key]] += used
                counts[self._names[key]] += 1
        return {
            "seconds": round(self._seconds, 1),
            "samples": len(self._loads),
            "load_average_max": max(self._loads, default=None),
            "swap_used_mb": max(self._swap, default=0.0),
            "busiest": others[:_BUSIEST],
            "services": [{"name": name, "processes": counts[name], "cpu_share": round(used / seconds, 3)}
                         for name, used in sorted(services.items(), key=lambda item: -item[1])],
        }

    def _watch(self) -> None:
        while not self._stop.wait(self._interval):
            self._read()

    def _read(self) -> None:
        now = processes()
        own = tree(self._root, now)
        for pid, process in now.items():
            if pid in own:
                continue
            before = self._last.get(pid)
            key = (pid, process.started)
            self._used[key] += process.cpu_seconds - (
                before.cpu_seconds if before and before.started == process.started else 0.0)
            self._names[key] = process.name
        self._last = now
        self._loads.append(psutil.getloadavg()[0])
        self._swap.append(_swap_used_mb())


def installed_packages() -> dict[str, str]:
    """Every distribution installed in this environment, name and version, sorted by name."""
    found = {dist.metadata["Name"]: dist.version for dist in metadata.distributions() if dist.metadata["Name"]}
    return dict(sorted(found.items(), key=lambda item: item[0].lower()))


def filesystem_of(path: Path) -> dict[str, str] | None:
    """The mount holding `path` (the deepest mount point above it): point, type, device and options."""
    target = path.resolve()
    while not target.exists() and target != target.parent:
        target = target.parent
    best: dict[str, str] | None = None
    try:
        mounts = psutil.disk_partitions(all=True)
    except OSError:
        return None
    for mount in mounts:
        point = Path(mount.mountpoint)
        if (target == point or point in target.parents) and (
                best is None or len(mount.mountpoint) > len(best["mount_point"])):
            best = {"mount_point": mount.mountpoint, "type": mount.fstype, "device": mount.device,
                    "options": mount.opts}
    return best


def warnings_for(environment: dict[str, Any]) -> list[FigureWarning]:
    """What in the recorded machine state would disturb the figures: a busy machine before the first run,
    other processes' CPU (one warning per phase, naming the worst), swap, and an unsteady clock."""
    cpus = environment.get("machine", {}).get("cpu_count") or 1
    states = environment.get("machine_state", {})
    found = []
    for moment in ("before", "during", "after"):
        state = states.get(moment)
        if not state:
            continue
        load = (state.get("load_average") or [0.0])[0]
        if moment == "before" and load > _LOAD_SHARE * cpus:
            found.append(FigureWarning(Kind.LOAD, "", f"load average {load:.2f} on {cpus} CPUs before the first "
                                                      "run: the machine was busy"))
        busy = _busy_process_warning(moment, state["busiest"])
        if busy:
            found.append(busy)
        if state["swap_used_mb"]:
            found.append(FigureWarning(Kind.SWAP, "", f"{state['swap_used_mb']:.0f} MB of swap in use {moment} the "
                                                      "runs: paging slows a run at random"))
    unsteady = sorted({g for g in (states.get("before") or {}).get("governors") or [] if g not in _QUIET_GOVERNORS})
    if unsteady:
        found.append(FigureWarning(Kind.GOVERNOR, "", f"CPU frequency governor {', '.join(unsteady)}: the clock "
                                   "follows the load, so runs after an idle moment start slower "
                                   "(`cpupower frequency-set -g performance`)"))
    return found


def _busy_process_warning(moment: str, busiest: list[dict[str, Any]]) -> FigureWarning | None:
    """One warning for every other process over _BUSY_SHARE of a CPU in one phase: the worst first, then the
    others briefly, so a busy machine reads as one line per phase rather than one per process."""
    busy = sorted((p for p in busiest if p["cpu_share"] > _BUSY_SHARE), key=lambda p: -p["cpu_share"])
    if not busy:
        return None
    worst, *others = busy
    over = " on average" if moment == "during" else ""
    also = "; also " + ", ".join(f"{p['name']} (pid {p['pid']}) {p['cpu_share']:.0%}" for p in others) if others else ""
    return FigureWarning(Kind.BUSY_PROCESS, f"{moment} the runs",
                         f"{worst['name']} (pid {worst['pid']}) used {worst['cpu_share']:.0%} of a CPU{over}{also}")


@contextmanager
def state_lock(state_dir: Path) -> Iterator[None]:
    """Hold the state folder for one experiment (an flock on `.lock` in it); StateFolderBusy if another holds it."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with (state_dir / ".lock").open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise StateFolderBusy(f"state folder {state_dir} is in use by {holder}: two experiments would reset "
                                  "each other's database and store; give this one --state-dir DIR") from error
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}")
        lock.flush()
        yield


def _busiest(exclude: set[int]) -> list[dict[str, Any]]:
    """The processes that used the most CPU over defaults.MACHINE_SNAPSHOT_SECONDS, as a share of one CPU."""
    before = processes()
    started = time.monotonic()
    time.sleep(defaults.MACHINE_SNAPSHOT_SECONDS)
    after = processes()
    seconds = time.monotonic() - started
    used = sorted(((after[pid].cpu_seconds - before[pid].cpu_seconds, pid) for pid in after.keys() & before.keys()
                   if pid not in exclude and after[pid].started == before[pid].started), reverse=True)
    return [{"pid": pid, "name": after[pid].name, "cpu_share": round(delta / seconds, 3)}
            for delta, pid in used[:_BUSIEST] if delta > 0]


def _governors() -> list[str]:
    """Each CPU's frequency governor, where the kernel exposes cpufreq (not in most VMs)."""
    found = []
    for path in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        try:
            found.append(path.read_text().strip())
        except OSError:
            continue
    return found


def _swap_used_mb() -> float:
    return round(psutil.swap_memory().used / 2**20, 1)
