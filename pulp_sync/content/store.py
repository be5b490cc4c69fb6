"""The content-addressed artifact store: verified files at `artifact/<sha[:2]>/<sha[2:]>` under a root.

Downloads land in a per-sync workspace inside `<root>/tmp`, on the same filesystem as the store,
so adopting a verified file is one atomic `os.replace`: a reader sees the whole file or none.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from django.conf import settings

from pulp_base.process_names import process_alive, this_process

__all__ = ["ArtifactStore", "StoreError", "artifact_store"]

_SHA256 = re.compile(r"[0-9a-f]{64}")


class StoreError(OSError):
    """Some of the store could not be deleted; the message lists what (the first few) and why."""


class ArtifactStore:
    """Files named by their sha256; a digest becomes a path only after it is checked to be one.

    The root may be a symbolic link (a store moved to a bigger disk); nothing inside it is followed:
    a link found in the store is an entry to remove or report, never a way out of the store.

    With `fsync`, each adopted file and its directory are flushed to disk before `adopt` returns,
    so an artifact recorded in the database survives a power cut. It costs two disk flushes per
    file, which on many small files can take longer than the downloads themselves (pulpcore's
    cost); without it the files survive a crash of the process, just not of the machine.
    """

    def __init__(self, root: Path, fsync: bool = False) -> None:
        self.root = Path(root)
        self.fsync = fsync

    @property
    def temp_dir(self) -> Path:
        """Where downloads are written before adoption (created on first use)."""
        folder = self.root / "tmp"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def relative_path_for(self, sha256: str) -> str:
        """The artifact's path relative to the root, as recorded in the database."""
        if not _SHA256.fullmatch(sha256):
            raise ValueError(f"not a sha256 digest (64 lowercase hex characters): {sha256!r}")
        return f"artifact/{sha256[:2]}/{sha256[2:]}"

    def path_for(self, sha256: str) -> Path:
        """Where the artifact with this digest lives; ValueError unless it is a sha256 hex digest."""
        return self.root / self.relative_path_for(sha256)

    @contextmanager
    def workspace(self, prefix: str = "sync") -> Iterator[Path]:
        """A fresh temp dir for one sync, removed with everything left in it when the block ends.

        Named `<prefix>-<random>@<host>:<pid>`: a task's sync uses its own prefix, so that if its
        process dies mid-sync, whoever notices can `remove_workspaces(prefix)`; the owner in the
        name (made in the same step as the folder) tells `verify` a live sync's from a dead one's.
        """
        folder = Path(tempfile.mkdtemp(prefix=f"{prefix}-", suffix=f"@{this_process()}", dir=self.temp_dir))
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def remove_workspaces(self, prefix: str) -> None:
        """Remove the workspaces named with `prefix`, and the partial downloads in them, of a dead sync."""
        for folder in self.temp_dir.glob(f"{prefix}-*"):
            shutil.rmtree(folder, ignore_errors=True)

    def temp_entries(self) -> tuple[list[Path], list[Path]]:
        """What the temp dir holds: (left behind, in use). A workspace is in use while its owner lives,
        or when its owner is on another host sharing the store (which cannot be seen from here)."""
        stale: list[Path] = []
        in_use: list[Path] = []
        for entry in sorted(self.temp_dir.iterdir()):
            owner = entry.name.rpartition("@")[2] if entry.is_dir() and "@" in entry.name else ""
            (in_use if owner and process_alive(owner) is not False else stale).append(entry)
        return stale, in_use

    def remove_temp_entry(self, entry: Path) -> None:
        """Delete a left-behind workspace (with its partial downloads) or file from the temp dir."""
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)

    def stored_files(self) -> Iterator[tuple[Path, str | None]]:
        """Every file under the root but the temp dir, with the digest its path names (None: not an
        artifact's path); a symbolic link, to a file or a folder, is an entry naming no digest."""
        for folder, subfolders, files in os.walk(self.root):
            here = Path(folder)
            if here == self.root:
                subfolders[:] = [name for name in subfolders if name != "tmp"]
            links = [name for name in subfolders if (here / name).is_symlink()]  # os.walk lists, never enters
            for name in files:
                path = here / name
                yield path, None if path.is_symlink() else self._digest_named_by(path)
            for name in links:
                yield here / name, None

    def _digest_named_by(self, path: Path) -> str | None:
        """The digest whose artifact lives at `path`, or None: `relative_path_for` read backwards."""
        relative = path.relative_to(self.root).as_posix()
        digest = "".join(relative.split("/")[1:])
        return digest if _SHA256.fullmatch(digest) and self.relative_path_for(digest) == relative else None

    def adopt(self, temp_file: Path, sha256: str) -> Path:
        """Move a verified temp file into place: one atomic rename, which also replaces whatever
        was there (the same bytes, or a damaged file). The folder is made only when it is missing.

        One rename and nothing else per artifact: on many small files every system call counts.
        """
        target = self.path_for(sha256)
        if self.fsync:
            _flush(temp_file)
        try:
            os.replace(temp_file, target)
        except FileNotFoundError:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(temp_file, target)
        if self.fsync:
            _flush(target.parent)
        return target

    def open(self, sha256: str) -> BinaryIO:
        """The artifact's bytes, for reading."""
        return self.path_for(sha256).open("rb")

    def holds(self, path: Path) -> bool:
        """Whether `path` is a file inside the store through real folders only: no link on the way."""
        relative = path.relative_to(self.root)
        return path.resolve() == self.root.resolve() / relative and path.is_file()

    def remove_all(self) -> None:
        """Delete every artifact and temp file (part of a reset): what is in the root, which may itself be
        a link; a link inside is removed, never followed. StoreError lists what could not be deleted."""
        failed: list[str] = []

        def note(path: str, error: BaseException) -> None:
            failed.append(f"{path} ({getattr(error, 'strerror', None) or error})")

        for entry in sorted(self.root.iterdir()) if self.root.is_dir() else ():
            try:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, onerror=lambda _function, path, info: note(path, info[1]))
                else:
                    entry.unlink()
            except OSError as error:
                note(str(entry), error)
        if failed:
            shown = "; ".join(failed[:5]) + (f"; and {len(failed) - 5} more" if len(failed) > 5 else "")
            raise StoreError(f"could not delete {len(failed)} item(s) of the store: {shown}")


def _flush(path: Path) -> None:
    """fsync a file or a directory (a directory's entry for a renamed file needs its own flush)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def artifact_store() -> ArtifactStore:
    """The store the settings name (`PULP_SYNC_HOME/artifacts`, `PULP_SYNC_FSYNC`)."""
    return ArtifactStore(settings.PULP_SYNC_ARTIFACTS, fsync=settings.PULP_SYNC_FSYNC)
