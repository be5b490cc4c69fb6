"""How many processes one sync splits its downloads across: the rule of the `download_processes` setting,
in one place for the command line, the API and the harness's specs (which may not import the service).

A whole number from 1 up, or "auto", stored as AUTO (0): one process per CPU this process may use,
bounded by the work; either way no more than the remote's download_concurrency, which the processes share
(pulp_sync.sync.split.planning.how_many decides).
"""

from __future__ import annotations

import os

__all__ = ["AUTO", "MAX_PROCESSES", "parse_processes", "processes_text", "usable_cpus"]

AUTO = 0
"""`download_processes` stored as 0 means "auto"."""

MAX_PROCESSES = 256
"""The most processes one sync may split its downloads across: far above the cores of any one machine,
low enough that a typo (10000) is refused rather than starting a storm of processes."""


def parse_processes(value: str | int, key: str = "download_processes") -> int:
    """`download_processes` as given: a whole number from 1 up, or "auto" (AUTO); ValueError with a sentence
    naming the value otherwise, and the `key` the user wrote (a spec's `processes`, the API's field)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return AUTO
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be a whole number from 1 up, or auto, not {value!r}") from None
    if not 1 <= number <= MAX_PROCESSES or str(number) != str(value).strip():
        raise ValueError(f"{key} must be from 1 to {MAX_PROCESSES}, or auto, not {value!r}")
    return number


def processes_text(setting: int) -> str:
    """The stored setting as people give it: "auto" or the number."""
    return "auto" if setting == AUTO else str(setting)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, which cgroups and `taskset` narrow), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)
