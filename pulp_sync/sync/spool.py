"""The spool: the downloads a sync planned, one line each, "sha256,size,relative path", in its workspace.

Written while planning (the database is read there), then read lazily: by the downloader's thread
(no database there), and twice by a split (pulp_sync.sync.split.planning: the weights, then the shards' own spools,
whose lines are the spool's, copied). The path comes last, so a comma in it would not break a line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Spooled", "spool_line", "parse_line", "read_spool"]


@dataclass(frozen=True)
class Spooled:
    """One planned download."""

    sha256: str
    size: int
    relative_path: str


def spool_line(sha256: str, size: int, relative_path: str) -> str:
    """One download as its spool line, newline included."""
    return f"{sha256},{size},{relative_path}\n"


def parse_line(line: str) -> Spooled:
    """A spool line (with or without its newline) as what it plans."""
    sha256, size, relative_path = line.rstrip("\n").split(",", 2)
    return Spooled(sha256, int(size), relative_path)


def read_spool(path: Path) -> Iterator[Spooled]:
    """Every planned download of a spool, one at a time."""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            yield parse_line(line)
