"""Progress of a sync's downloads: a small protocol, a rich bar for terminals, a line every few seconds for
pipes and logs, and a silent sink."""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from pulp_sync import defaults

__all__ = ["Throttle", "ProgressSink", "ShardsSink", "ShardProgress", "NullProgress", "RichProgress", "LineProgress",
           "progress_for"]


@runtime_checkable
class ProgressSink(Protocol):
    """Told how much a sync will download, then each downloaded artifact, then the end."""

    def start(self, total_artifacts: int, total_bytes: int) -> None: ...

    def advance(self, artifacts: int, bytes: int) -> None: ...

    def finish(self) -> None: ...


ShardProgress = dict[str, int]
"""One shard of a split sync, as a task records it: `shard` (from 1), `files`, `files_done`, `bytes`,
`bytes_done`."""


@runtime_checkable
class ShardsSink(ProgressSink, Protocol):
    """A ProgressSink that also keeps each shard's progress of a split sync (a task's, for its record)."""

    def shards(self, reports: list[ShardProgress]) -> None: ...


class NullProgress:
    """Reports nothing: for pipes, logs and workers."""

    def start(self, total_artifacts: int, total_bytes: int) -> None:
        pass

    def advance(self, artifacts: int, bytes: int) -> None:
        pass

    def finish(self) -> None:
        pass


class RichProgress:
    """A live bar on the console: artifacts done of total, bytes, rate and time left."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("{task.fields[done]}/{task.fields[artifacts]} artifacts"),
            BarColumn(),
            DownloadColumn(binary_units=False),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self._task: TaskID | None = None
        self._done = 0

    def start(self, total_artifacts: int, total_bytes: int) -> None:
        self._progress.start()
        self._task = self._progress.add_task("sync", total=total_bytes, done=0, artifacts=total_artifacts)

    def advance(self, artifacts: int, bytes: int) -> None:
        assert self._task is not None, "advance() before start()"
        self._done += artifacts
        self._progress.update(self._task, advance=bytes, done=self._done)

    def finish(self) -> None:
        self._progress.stop()


class Throttle:
    """When throttled progress is due: at most every `interval` seconds, counted from the start (`restart`)
    or from when it was last due. A task's row, a shard's reports and a log's lines all keep their time
    here, so that a sync's progress costs a write per interval, not one per file; each writer says at its
    own finish whether the last progress is written."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._last = time.monotonic()

    def restart(self) -> None:
        self._last = time.monotonic()

    def due(self) -> bool:
        now = time.monotonic()
        if now - self._last < self._interval:
            return False
        self._last = now
        return True


class LineProgress:
    """For a pipe or a CI log: a line every `defaults.PROGRESS_LINE_SECONDS` while a sync downloads (none
    for a shorter sync), so that a long one shows it is alive, and how far, without a redraw per file."""

    def __init__(self, console: Console, doing: str = "Downloading", interval: float | None = None) -> None:
        self._console, self._doing = console, doing
        self._throttle = Throttle(defaults.PROGRESS_LINE_SECONDS if interval is None else interval)
        self._artifacts = self._bytes = self._total_artifacts = self._total_bytes = 0
        self._started = time.monotonic()

    def start(self, total_artifacts: int, total_bytes: int) -> None:
        self._total_artifacts, self._total_bytes = total_artifacts, total_bytes
        self._started = time.monotonic()
        self._throttle.restart()

    def advance(self, artifacts: int, bytes: int) -> None:
        self._artifacts += artifacts
        self._bytes += bytes
        if self._throttle.due() and (seconds := time.monotonic() - self._started) > 0:
            self._console.print(self._line(seconds), highlight=False, markup=False)

    def finish(self) -> None:
        pass  # the sync's own summary follows

    def _line(self, seconds: float) -> str:
        share = f" ({self._bytes / self._total_bytes:.0%})" if self._total_bytes else ""
        return (f"{self._doing}: {self._artifacts}/{self._total_artifacts} artifacts, {self._bytes / 1e6:.1f} of "
                f"{self._total_bytes / 1e6:.1f} MB{share}, {self._bytes / 1e6 / seconds:.1f} MB/s, {seconds:.0f} s")


def progress_for(console: Console, doing: str = "Downloading") -> ProgressSink:
    """A bar when the console is a terminal; otherwise a line every few seconds (LineProgress, each line
    starting with `doing`), so that logs show a long sync's progress without being full of redraws."""
    return RichProgress(console) if console.is_terminal else LineProgress(console, doing)
