"""Facts about where and with what an experiment ran: machine, package versions, git commit.

Numbers from two machines or two commits are not comparable; results.json says which they came from.
Gathering them is probing the machine, as harness.run.machine does, so it is the runner's; results.json
only keeps what it is given.
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from downloaders.registry import ENTRY_POINT_GROUP
from harness import defaults
from harness.run.machine import filesystem_of, installed_packages, snapshot

__all__ = ["environment_facts", "machine_facts", "package_versions", "downloader_distributions", "git_facts"]

PACKAGES = ("pulp-sync", "aiohttp", "urllib3", "Django", "click", "rich", "scipy", "numpy", "matplotlib")
"""Packages whose versions can change a result or how it is computed, shown first; `installed` has them all."""


def environment_facts(repository: Path | None = None, state_dir: Path | None = None) -> dict[str, Any]:
    """Everything results.json records about the environment, the machine's state before the first run
    (harness.run.machine.snapshot) and, with `state_dir`, the filesystem the runs' store and database are on."""
    return {
        "machine": machine_facts(),
        "packages": package_versions(),
        "installed": installed_packages(),
        "downloaders": downloader_distributions(),
        "git": git_facts(repository),
        "machine_state": {"before": snapshot()},
        "state_filesystem": filesystem_of(state_dir) if state_dir is not None else None,
    }


def machine_facts() -> dict[str, Any]:
    """CPU, memory, OS and Python: what decides how fast the same code runs."""
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gb": _memory_gb(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def package_versions() -> dict[str, str | None]:
    """Installed versions of PACKAGES (None when one is not installed)."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def downloader_distributions() -> dict[str, dict[str, Any]]:
    """Each installed downloader (entry point) with the distribution that provides it, its version, and
    the versions of that distribution's own requirements: a plugin's figures depend on its libraries."""
    found: dict[str, dict[str, Any]] = {}
    for point in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        dist = point.dist
        if dist is None:
            found[point.name] = {"entry_point": point.value, "distribution": None}
            continue
        requires = [Requirement(text) for text in dist.requires or ()]
        found[point.name] = {
            "entry_point": point.value,
            "distribution": dist.metadata["Name"],
            "version": dist.version,
            "requires": {r.name: _version_of(r.name) for r in requires if r.marker is None},
        }
    return found


def _version_of(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def git_facts(repository: Path | None = None) -> dict[str, Any]:
    """The commit of the code under test and whether the tree had changes; None outside git."""
    folder = repository or defaults.CHECKOUT
    commit = _git(folder, "rev-parse", "HEAD")
    status = _git(folder, "status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except (OSError, ValueError):
        pass
    return None
