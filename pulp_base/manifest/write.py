"""Writing a PULP_MANIFEST: the fixture generator's trees and the harness's samples, in the one format
that `parse_manifest` reads back.

A line is refused before it is written if the reader would refuse it (`path_problem`), so that a tree
made here can never hold a manifest the sync turns down.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from pulp_base.manifest.parse import ManifestError, path_problem

__all__ = ["Listed", "format_line", "manifest_text", "write_manifest"]

_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


class Listed(Protocol):
    """Anything that names a file of a manifest: a ManifestEntry, or a generator's own record."""

    @property
    def relative_path(self) -> str: ...

    @property
    def sha256(self) -> str: ...

    @property
    def size(self) -> int: ...


def format_line(entry: Listed, line: int) -> str:
    """`entry` as line `line` of a manifest, with its line break; ManifestError if a reader would refuse it."""
    problem = path_problem(entry.relative_path)
    if problem:
        raise ManifestError(line, f"relative path {entry.relative_path!r} {problem}")
    if not _HEX_DIGEST.fullmatch(entry.sha256):
        raise ManifestError(line, f"sha256 {entry.sha256!r} is not 64 lowercase hexadecimal characters")
    if entry.size < 0:
        raise ManifestError(line, f"size {entry.size} is negative")
    return f"{entry.relative_path},{entry.sha256},{entry.size}\n"


def manifest_text(entries: Iterable[Listed]) -> str:
    """The manifest listing `entries`, in the order given."""
    return "".join(format_line(entry, number) for number, entry in enumerate(entries, start=1))


def write_manifest(entries: Iterable[Listed], path: Path) -> None:
    """Write `entries` as a PULP_MANIFEST at `path` (UTF-8, LF line breaks), in the order given; nothing
    is written if a line would be refused."""
    body = manifest_text(entries)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write(body)
