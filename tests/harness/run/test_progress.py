"""Progress: plain lines without a terminal, a live bar with one."""

from __future__ import annotations

import io

from rich.console import Console

from harness.run.progress import PlainProgress, RichProgress, progress_for
from harness.run.schedule import PlannedRun
from tests.harness.helpers import make_run

PLANNED = PlannedRun("100", 2, 1, "asyncio", False)


def _drive(progress: PlainProgress | RichProgress) -> None:
    progress.start(total=4, done=1)
    progress.run_started(PLANNED, "100 asyncio run 1/3")
    progress.run_finished(make_run("asyncio", 1.234))
    progress.run_started(PLANNED, "100 futures run 1/3")
    progress.run_finished(make_run("futures", None, ok=False, error="Error: boom"))
    progress.stop()
    progress.note("Deleting the runs' files [kept] ...")


def test_plain_lines_without_a_terminal() -> None:
    out = io.StringIO()
    progress = progress_for(Console(file=out, force_terminal=False))
    assert isinstance(progress, PlainProgress)
    _drive(progress)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Resuming: 1 of 4 runs already made"
    assert lines[1].startswith("[2/4] 100 asyncio run 1/3: 1.234 s  (ETA ")
    assert lines[2].startswith("[3/4] 100 futures run 1/3: FAILED: Error: boom")
    assert lines[3] == "Deleting the runs' files [kept] ..."  # as given: no markup


def test_a_live_bar_on_a_terminal() -> None:
    out = io.StringIO()
    progress = progress_for(Console(file=out, force_terminal=True, width=120))
    assert isinstance(progress, RichProgress)
    _drive(progress)
    assert "FAILED: Error: boom" in out.getvalue()
    assert "Deleting the runs' files [kept] ..." in out.getvalue()
