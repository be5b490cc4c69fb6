"""Live progress of an experiment: a rich bar on a terminal, one plain line per run otherwise.

Shows the cell, run i of n, the last sync time and an ETA from the mean time per run so far.
"""

from __future__ import annotations

import time
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from harness.results.records import RunRecord
from harness.run.schedule import PlannedRun

__all__ = ["RunProgress", "progress_for", "PlainProgress", "RichProgress", "describe_run"]


class RunProgress(Protocol):
    """What the runner tells about its progress."""

    def start(self, total: int, done: int) -> None: ...
    def run_started(self, planned: PlannedRun, label: str) -> None: ...
    def run_finished(self, record: RunRecord) -> None: ...
    def stop(self) -> None: ...
    def note(self, text: str) -> None: ...


def progress_for(console: Console, quiet: bool = False) -> RunProgress:
    """A rich bar when `console` is a terminal, plain lines when it is not (CI logs, pipes)."""
    if quiet:
        return _Silent()
    return RichProgress(console) if console.is_terminal else PlainProgress(console)


def describe_run(record: RunRecord) -> str:
    """The outcome of a run in a few words: its time, or its error."""
    if not record.ok:
        return f"FAILED: {record.error}"
    kind = " (warm-up)" if record.warmup else ""
    return f"{record.sync_seconds:.3f} s{kind}"


class PlainProgress:
    """One line per finished run, with the ETA: readable in a log file."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.total = self.done = self.made = 0
        self.started = time.monotonic()
        self.label = ""

    def start(self, total: int, done: int) -> None:
        self.total, self.done, self.started = total, done, time.monotonic()
        if done:
            self.console.print(f"Resuming: {done} of {total} runs already made")

    def run_started(self, planned: PlannedRun, label: str) -> None:
        self.label = label

    def run_finished(self, record: RunRecord) -> None:
        self.done += 1
        self.made += 1
        self.console.print(f"[{self.done}/{self.total}] {self.label}: {describe_run(record)}{self._eta()}",
                           highlight=False, markup=False)

    def stop(self) -> None:
        pass

    def note(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False)

    def _eta(self) -> str:
        left = self.total - self.done
        if not left or not self.made:
            return ""
        seconds = (time.monotonic() - self.started) / self.made * left
        return f"  (ETA {int(seconds // 60)}m{int(seconds % 60):02d}s)"


class RichProgress:
    """A live bar: the run in flight, i of n, elapsed, ETA, and the last outcome below it."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("last: {task.fields[last]}"),
            console=console,
        )
        self.task = self.bar.add_task("starting", total=None, last="–")
        self.label = ""

    def start(self, total: int, done: int) -> None:
        self.bar.update(self.task, total=total, completed=done)
        self.bar.start()

    def run_started(self, planned: PlannedRun, label: str) -> None:
        self.label = label
        self.bar.update(self.task, description=label)

    def run_finished(self, record: RunRecord) -> None:
        self.bar.update(self.task, advance=1, last=describe_run(record))
        if not record.ok:
            self.bar.console.print(f"[red]{self.label}: {describe_run(record)}[/red]", highlight=False)

    def stop(self) -> None:
        self.bar.stop()

    def note(self, text: str) -> None:
        self.bar.console.print(text, highlight=False, markup=False)


class _Silent:
    """No progress at all (tests, --quiet)."""

    def start(self, total: int, done: int) -> None:
        pass

    def run_started(self, planned: PlannedRun, label: str) -> None:
        pass

    def run_finished(self, record: RunRecord) -> None:
        pass

    def stop(self) -> None:
        pass

    def note(self, text: str) -> None:
        pass
