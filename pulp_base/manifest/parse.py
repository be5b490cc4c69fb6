"""Reading a PULP_MANIFEST: one `relative_path,sha256,size` per line, parsed lazily, checked line by line.

A manifest comes from a remote nobody here controls, so every field is validated before it can
name a file, a URL or a row: a path cannot climb out of the repository (`..`, absolute, drive
letters, backslashes), a digest is 64 hex characters, a size is plain digits. The parser keeps
only what the cross-line checks need (each path's and each digest's first line), so a manifest of
100,000 lines streams through in a few megabytes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ManifestEntry", "ManifestError", "parse_manifest", "path_problem", "MANIFEST_NAME", "MAX_PATH_LENGTH",
           "MAX_LINE_BYTES"]

MANIFEST_NAME = "PULP_MANIFEST"
"""The file name of a manifest (Pulp's own): what a remote serves, a fixture tree holds and a publication
serves unless named otherwise; the seed's sets add a suffix (PULP_MANIFEST_100)."""
MAX_PATH_LENGTH = 1024
"""Longest relative path accepted, in characters (the FileContent column's length)."""
MAX_LINE_BYTES = 4 * MAX_PATH_LENGTH + 128
"""Longest line read from a file: the longest valid line (a path of 4-byte characters, a digest, a
size, a CRLF) fits; reading stops there, so a file without line breaks cannot fill the memory."""

_MAX_SIZE = 2**63 - 1
_HEX_DIGEST = re.compile(r"[0-9a-fA-F]{64}")
_DIGITS = re.compile(r"[0-9]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_DRIVE = re.compile(r"[A-Za-z]:")
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class ManifestEntry:
    """One valid manifest line; `sha256` is lowercase."""

    line: int
    relative_path: str
    sha256: str
    size: int


class ManifestError(ValueError):
    """A manifest line that cannot be trusted; the message names the line and what is wrong with it."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"{MANIFEST_NAME} line {line}: {message}")
        self.line = line
        self.message = message


def parse_manifest(source: Iterable[str] | os.PathLike[str]) -> Iterator[ManifestEntry]:
    """Yield the entries of a manifest file (a Path) or of lines of text, raising at the first bad line.

    Blank lines are skipped, CRLF endings accepted. A plain `str` is refused: it would be read as
    characters, not as a file name.
    """
    if isinstance(source, str):
        raise TypeError("parse_manifest takes a Path or an iterable of lines, not a str")
    return _entries(_decoded_lines(Path(source)) if isinstance(source, os.PathLike) else source)


def _entries(lines: Iterable[str]) -> Iterator[ManifestEntry]:
    paths: dict[str, int] = {}
    digests: dict[str, tuple[int, int]] = {}
    total = 0
    for number, text in enumerate(lines, start=1):
        text = text.removesuffix("\n").removesuffix("\r")
        if number == 1:
            text = text.removeprefix("\ufeff")
        if text.strip():
            entry = _parse_line(number, text)
            _check_unique(entry, paths, digests)
            total += entry.size
            if total > _MAX_SIZE:  # a task's byte counts are 64-bit columns: no store holds more anyway
                raise ManifestError(number, f"the sizes so far add up to more than {_MAX_SIZE} bytes")
            yield entry


def _decoded_lines(path: Path) -> Iterator[str]:
    """The file's lines as text, each read up to MAX_LINE_BYTES; a longer line, or one that is not
    UTF-8, is an error naming it."""
    with path.open("rb") as manifest:
        for number, raw in enumerate(iter(lambda: manifest.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise ManifestError(number, f"is longer than {MAX_LINE_BYTES} bytes")
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ManifestError(number, _not_text(raw, error)) from error


def _not_text(raw: bytes, error: UnicodeDecodeError) -> str:
    """Why a line is not text; a gzip stream is named, for a server that compressed the manifest."""
    if raw.startswith(_GZIP_MAGIC):
        return "is gzip-compressed data, not text: the server must send the manifest as it is"
    return f"not UTF-8 (byte {raw[error.start]:#04x} at column {error.start + 1})"


def _parse_line(number: int, text: str) -> ManifestEntry:
    fields = text.split(",")
    if len(fields) != 3:
        raise ManifestError(number, f"expected 3 fields, relative_path,sha256,size, found {len(fields)}")
    relative_path, digest, size = fields
    _check_path(number, relative_path)
    if not _HEX_DIGEST.fullmatch(digest):
        raise ManifestError(number, f"sha256 {_shown(digest)} is not 64 hexadecimal characters")
    if not _DIGITS.fullmatch(size) or int(size) > _MAX_SIZE:
        raise ManifestError(number, f"size {_shown(size)} is not a non-negative integer")
    return ManifestEntry(number, relative_path, digest.lower(), int(size))


def _check_path(number: int, path: str) -> None:
    """A path that stays inside the repository on any OS, and that a URL and a column can hold."""
    problem = path_problem(path)
    if problem:
        raise ManifestError(number, f"relative path {_shown(path)} {problem}")


def path_problem(path: str) -> str | None:
    """What makes `path` unfit for a manifest line (None if nothing): the rules every reader and
    writer of the format share. A comma is one: the line has exactly three comma-separated fields."""
    if not path:
        return "is empty"
    if len(path) > MAX_PATH_LENGTH:
        return f"is longer than {MAX_PATH_LENGTH} characters"
    if _CONTROL.search(path):
        return "contains a control character"
    if "," in path:
        return "contains a comma, which separates a line's fields"
    if "\\" in path:
        return "contains a backslash; separate directories with '/'"
    if path.startswith("/") or _DRIVE.match(path):
        return "is absolute; paths are relative to the manifest's directory"
    if any(segment in ("", ".", "..") for segment in path.split("/")):
        return "has an empty, '.' or '..' segment"
    return None


def _check_unique(entry: ManifestEntry, paths: dict[str, int], digests: dict[str, tuple[int, int]]) -> None:
    """A path names one file, and a digest one size: a manifest that says otherwise is corrupt."""
    first = paths.setdefault(entry.relative_path, entry.line)
    if first != entry.line:
        path = _shown(entry.relative_path)
        raise ManifestError(entry.line, f"duplicate relative path {path} (first on line {first})")
    size, line = digests.setdefault(entry.sha256, (entry.size, entry.line))
    if size != entry.size:
        raise ManifestError(entry.line, f"sha256 {entry.sha256} has size {entry.size} here but {size} on line {line}")


def _shown(value: str) -> str:
    """A field quoted for a message, cut short if a hostile manifest made it huge."""
    return repr(value if len(value) <= 80 else value[:77] + "...")
