"""Files and folders that only their owner may read, whatever the umask: pulp-sync's sqlite database
(remote passwords, session keys) with its -wal and -shm, its secret key and PULP_SYNC_HOME, the
harness's logs of pulpcore.

A process creates files with the mode its umask leaves (0644 under the usual 022: every local user could
read the database, and a session key read from it let them act as its owner), and sqlite gives -wal and
-shm the database's own mode. So such a file is created owner-only here before anything else opens it,
and what an earlier installation left readable is tightened.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["FILE_MODE", "DIRECTORY_MODE", "make_directory", "create", "copy", "tighten", "owner_only"]

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
_OTHERS = 0o077
"""The bits of the group and of everybody else."""


def make_directory(path: Path) -> None:
    """`path`, owner-only when made here (its missing parents get the umask's mode, as with `mkdir -p`)."""
    path.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)


def create(path: Path) -> None:
    """`path` as an empty owner-only file, unless it exists (left as it is)."""
    try:
        open(path, "xb", opener=owner_only).close()
    except FileExistsError:
        pass


def copy(source: Path, target: Path) -> None:
    """`source`'s bytes as `target`, owner-only whatever `target` was (a plain copy takes the umask's mode)."""
    with source.open("rb") as reader, open(target, "wb", opener=owner_only) as writer:
        shutil.copyfileobj(reader, writer)


def tighten(paths: Iterable[Path]) -> list[str]:
    """Each of `paths` that exists and that other users may use, made its owner's alone (the owner's own
    bits kept); `"path (was 0644)"` for each. A sticky folder (/tmp) is shared by design and keeps its
    mode. The OSError of one whose mode cannot be changed (another user's) is raised: used as it is, it
    would stay readable by others."""
    tightened = []
    for path in paths:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & _OTHERS and not mode & stat.S_ISVTX:
            os.chmod(path, mode & ~_OTHERS)
            tightened.append(f"{path} (was {mode:04o})")
    return tightened


def owner_only(path: str, flags: int) -> int:
    """An `open` opener: the file created with FILE_MODE, and set to it if it existed (`open(path, "wb",
    opener=owner_only)`, for a log that may quote a secret, say)."""
    descriptor = os.open(path, flags, FILE_MODE)
    os.fchmod(descriptor, FILE_MODE)
    return descriptor
