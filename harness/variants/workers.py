"""The RQ workers of a `tasking = "rq"` variant: started fresh for every run, stopped after it.

Each run gets `workers` new `pulp-sync worker` processes (RQ's forking Worker or its SimpleWorker,
as the variant's `worker` says) on a queue of the harness's own, after the reset and before the
sync is queued, so no run inherits a warm worker from the one before. The run waits until every
worker has registered with Redis, so start-up is not timed as part of the sync. After the run the
workers get SIGTERM (RQ's warm shutdown) and are reaped with `os.wait4`, whose rusage covers each
worker and the work horses it forked: the CPU of the whole service side of the run. Peak RSS is
sampled from /proc while they run, work horses included (harness.run.child.HighWater).

With `hosts = N` the `workers` are started on each of N hosts (harness.variants.hosts): scripts/hosts.sh execs
into the worker, so the process started is still the worker itself and all of the above holds.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from harness import defaults
from harness.errors import HarnessError
from harness.run.child import HighWater
from harness.variants.hosts import on_host
from pulp_base import servers

__all__ = ["WorkersFailed", "WorkerUsage", "QUEUE", "REDIS_URL", "running_workers"]

QUEUE = f"pulp-sync-bench-{os.getpid()}"
"""The queue benchmarked tasks go through: never an operator's own (`pulp-sync`), nor another
experiment's running at the same time."""
REDIS_URL = "redis://127.0.0.1:6379/0"
"""Where the workers' Redis is when the environment names none (pulp-sync's own default)."""


class WorkersFailed(HarnessError, RuntimeError):
    """The workers did not start (or Redis is not there); the message has what they printed."""


@dataclass(frozen=True)
class WorkerUsage:
    """What the workers of one run used, summed over workers (and their work horses)."""

    user_seconds: float
    system_seconds: float
    peak_rss_mb: float
    voluntary_switches: int
    involuntary_switches: int


class running_workers:  # noqa: N801 - a context manager named for how it reads: `with running_workers(...)`
    """`count` workers of `worker_class` on `queue` (QUEUE) for the duration of a `with` block, on this
    machine, or `count` on each of `hosts` hosts (harness.variants.hosts); `usage` after it.

    `env` is the run's (harness.variants.pulp_sync_cli.child_env, harness.variants.hosts.on_bridge with hosts),
    which names QUEUE for the sync child too."""

    def __init__(self, count: int, worker_class: str, env: Mapping[str, str],
                 command: Sequence[str] = defaults.PULP_SYNC_COMMAND, queue: str = QUEUE, hosts: int = 0) -> None:
        arguments = [*command, "worker", "--worker-class", worker_class, "--queue", queue]
        self.commands = _worker_commands(arguments, count, hosts)
        self.count = len(self.commands)
        self.queue = queue
        self.env = dict(env)
        self.usage: WorkerUsage | None = None
        self._processes: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
        self._high_water = HighWater()
        self._sampling = threading.Event()
        self._sampler = threading.Thread(target=self._sample, name="worker-rss", daemon=True)

    def __enter__(self) -> running_workers:
        self._empty_queue()
        try:
            for arguments in self.commands:
                log = tempfile.TemporaryFile()
                self._processes.append((servers.start(arguments, log, env=self.env), log))
            self._wait_until_registered()
            self._sampler.start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.usage = self._stop()

    @property
    def pids(self) -> tuple[int, ...]:
        """The workers' process ids (their work horses are their children)."""
        return tuple(process.pid for process, _ in self._processes)

    def _queue(self) -> Any:
        from redis import Redis
        from redis.exceptions import RedisError
        from rq import Queue

        url = self.env.get("REDIS_URL") or REDIS_URL
        try:
            redis = Redis.from_url(url, socket_connect_timeout=5)
            redis.ping()
        except RedisError as error:
            raise WorkersFailed(f"Redis at {url}: {error}; is REDIS_URL right, and Redis up?") from error
        return Queue(self.queue, connection=redis)

    def _empty_queue(self) -> None:
        """Drop jobs a failed run left behind: their tasks went with the reset."""
        self._queue().empty()

    def _wait_until_registered(self) -> None:
        """Until Redis lists `count` workers on the queue; a worker that exits first is an error with its output."""
        from rq import Worker

        queue = self._queue()
        servers.wait_until(
            lambda: Worker.count(queue=queue) >= self.count or None,
            {f"`pulp-sync worker` {n}": process for n, (process, _) in enumerate(self._processes, start=1)},
            within=defaults.WORKERS_START_SECONDS, what=f"{self.count} workers did not register with Redis",
            output=lambda: " / ".join(servers.tail(log) for _, log in self._processes), failure=WorkersFailed,
        )

    def _sample(self) -> None:
        while not self._sampling.wait(defaults.WORKERS_RSS_SAMPLE_SECONDS):
            for process, _ in self._processes:
                self._high_water.sample(process.pid)

    def _stop(self) -> WorkerUsage:
        """SIGTERM every worker, reap each with wait4 (SIGKILL past the deadline), sum their rusage."""
        self._sampling.set()
        if self._sampler.is_alive():
            self._sampler.join()
        for process, _ in self._processes:
            self._high_water.sample(process.pid)
        for process, _ in self._processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + defaults.WORKERS_STOP_SECONDS
        usages = [_reap(process, deadline) for process, _ in self._processes]
        for _, log in self._processes:
            log.close()
        self._processes.clear()
        return WorkerUsage(
            user_seconds=sum(u.ru_utime for u in usages if u),
            system_seconds=sum(u.ru_stime for u in usages if u),
            peak_rss_mb=self._high_water.kib / 1024,
            voluntary_switches=sum(u.ru_nvcsw for u in usages if u),
            involuntary_switches=sum(u.ru_nivcsw for u in usages if u),
        )


def _worker_commands(arguments: list[str], count: int, hosts: int) -> list[list[str]]:
    """`count` worker command lines for this machine, or `count` for each of hosts 1..`hosts`."""
    if hosts == 0:
        return [arguments] * count
    return [on_host(host, arguments) for host in range(1, hosts + 1) for _ in range(count)]


def _reap(process: subprocess.Popen[bytes], deadline: float) -> resource.struct_rusage | None:
    """The rusage of a worker once it exited; None when Popen reaped it already (it died early)."""
    while True:
        try:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return usage
        if time.monotonic() > deadline:
            process.kill()
        time.sleep(0.01)

