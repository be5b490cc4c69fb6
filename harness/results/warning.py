"""The harness's one warning: what a plan, a run or the machine did that the figures should be read with.

Four places find warnings (the plan, the runs' statistics, a sweep, the machine's state) and four
outputs show them (the terminal, summary.md, report.html, results.json). One typed record between
them keeps each output's wording the same and lets a reader, or a script reading results.json, pick
warnings by kind or by the cell they concern instead of matching sentences.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Kind", "FigureWarning"]


class Kind(StrEnum):
    """What a warning is about; the values are what results.json records."""

    FAILED_RUNS = "failed-runs"
    NOISY = "noisy"
    CARRYOVER = "carryover"
    OUTLIERS = "outliers"
    BLIND_SPOT = "blind-spot"
    RETRIES = "retries"
    LOAD = "load"
    BUSY_PROCESS = "busy-process"
    SWAP = "swap"
    GOVERNOR = "governor"
    PLAN = "plan"


@dataclass(frozen=True)
class FigureWarning:
    """One warning: its kind, what it concerns (a cell "manifest x variant", a phase of the runs, or ""
    for the whole experiment) and the sentence that says what happened and what to do."""

    kind: Kind
    subject: str
    text: str

    def __str__(self) -> str:
        return f"{self.subject}: {self.text}" if self.subject else self.text

    def as_dict(self) -> dict[str, str]:
        """JSON-ready."""
        return {"kind": self.kind.value, "subject": self.subject, "text": self.text}
