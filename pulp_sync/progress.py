"""Progress of a sync's downloads: a small protocol, a rich bar for terminals, and a silent sink."""

from __future__ import annotations

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

__all__ = ["ProgressSink", "ShardsSink", "ShardProgress", "NullProgress", "RichProgress", "progress_for"]


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


def progress_for(console: Console) -> ProgressSink:
    """A bar when the console is a terminal, nothing otherwise (so logs are not full of redraws)."""
    return RichProgress(console) if console.is_terminal else NullProgress()
