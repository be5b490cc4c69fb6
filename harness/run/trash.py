"""Trees a run leaves behind (the artifact store, a peer's output): deleted now, or moved aside if
they hold many files, and deleted when the experiment ends.

Deleting ten thousand files right before a run makes that run's own file creation slow on some
filesystems: ext4 without a journal does not reuse an inode freed in the last 30 seconds, and
finding a free one walks past every such inode of the group (`recently_deleted()` in the kernel),
up to 0.5 ms per new file on this project's test VM. The next run then measured the last one's
cleanup: curl took 6.0 s on the many-small tree after a deletion and 1.2 s without one
(docs/harness.md, "Deleting files between runs"). A rename costs nothing, so such a tree waits in
the trash. A tree of a few big files is deleted at once instead: deleting it also drops its pages
not yet written, where keeping it would leave the disk writing 408 MB per run of the 100 manifest
while the next runs write theirs (big-file syncs took twice as long in a run that kept them).
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

__all__ = ["Trash"]


class Trash:
    """A folder of trees waiting to be deleted, on the same filesystem as what it takes in.

    A tree of at least `many_files` files goes into the trash, a smaller one is deleted at once.
    `min_free` is the share of the disk that must stay free: once free space falls below it, the
    trash is emptied at once (a slow run after that is the price of not filling the disk).
    """

    def __init__(self, folder: Path, many_files: int, min_free: float) -> None:
        self.folder = folder
        self.many_files = many_files
        self.min_free = min_free
        self._names = itertools.count()

    def discard(self, tree: Path) -> None:
        """Delete `tree` (a folder, if it exists) or, if it holds many files, move it into the trash;
        empty the trash if the disk runs short."""
        if not tree.exists():
            return
        if not _holds_at_least(tree, self.many_files):
            shutil.rmtree(tree, ignore_errors=True)
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        os.rename(tree, self._fresh_name())
        if self._disk_short():
            self.empty()

    def empty(self) -> None:
        """Delete everything in the trash."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def _fresh_name(self) -> Path:
        while (candidate := self.folder / str(next(self._names))).exists():
            continue
        return candidate

    def _disk_short(self) -> bool:
        usage = shutil.disk_usage(self.folder)
        return usage.free < self.min_free * usage.total


def _holds_at_least(tree: Path, files: int) -> bool:
    """Whether `tree` has `files` files or more; stops counting there."""
    found = 0
    for _, _, names in os.walk(tree):
        found += len(names)
        if found >= files:
            return True
    return False
