"""BodyWriter: a body streamed to a temp file while its size and sha256 are checked."""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
from pathlib import Path
from types import TracebackType

from downloaders.errors import BodyTooLarge, DigestMismatch, LocalStorageError, SizeMismatch
from downloaders.types import DownloadRequest

__all__ = ["BodyWriter"]


class BodyWriter:
    """Writes one attempt's body into a fresh temp file; removes it unless `finish` verifies it.

    Used as a context manager: leaving the block without a successful `finish` (an error, a
    cancellation) deletes the file, so no partial download survives any failure. A local write
    error (a full disk) is a LocalStorageError, so every engine reports it alike and does not retry.

    `write` is `check`, `add_to_digest` and `store`; `finish` is `close`, then `verify` of
    `hexdigest`. An engine may hash in another thread (see downloaders.offload).
    """

    def __init__(self, request: DownloadRequest, temp_dir: Path) -> None:
        self.request = request
        try:
            fd, name = tempfile.mkstemp(dir=temp_dir, prefix=".download-", suffix=".part")
        except OSError as error:
            raise LocalStorageError(request.url, error) from error
        self.path = Path(name)
        self._fd: int | None = fd
        self._hash = hashlib.sha256()
        self.size = 0
        self._kept = False

    def write(self, chunk: bytes) -> None:
        """Append a chunk; fail as soon as the body grows past the expected size or the size limit."""
        self.check(chunk)
        self.add_to_digest(chunk)
        self.store(chunk)

    def check(self, chunk: bytes) -> None:
        """Count a chunk in; raise as soon as the body is longer than expected or than the limit."""
        self.size += len(chunk)
        expected, limit = self.request.size, self.request.max_size
        if expected is not None and self.size > expected:
            raise SizeMismatch(self.request.url, expected, self.size)
        if limit is not None and self.size > limit:
            raise BodyTooLarge(self.request.url, limit)

    def add_to_digest(self, chunk: bytes) -> None:
        """Hash a chunk: the one step an engine may run in another thread (in order, chunk after chunk)."""
        self._hash.update(chunk)

    def store(self, chunk: bytes) -> None:
        """Write a checked chunk to the temp file."""
        try:
            _write_all(self._fd, chunk)
        except OSError as error:
            raise LocalStorageError(self.request.url, error) from error

    def hexdigest(self) -> str:
        """The sha256 of every chunk added to the digest so far."""
        return self._hash.hexdigest()

    def close(self) -> None:
        """Close the temp file (it stays until `verify` keeps it or `discard` removes it)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def verify(self, digest: str) -> str:
        """Check the body's size and `digest` against the request; keep the file if they match."""
        expected_size, expected_digest = self.request.size, self.request.sha256
        if expected_size is not None and self.size != expected_size:
            raise SizeMismatch(self.request.url, expected_size, self.size)
        if expected_digest is not None and digest != expected_digest.lower():
            raise DigestMismatch(self.request.url, expected_digest, digest)
        self._kept = True
        return digest

    def finish(self) -> str:
        """Close and verify the file; returns its sha256. The file is kept only if this succeeds."""
        self.close()
        return self.verify(self.hexdigest())

    def discard(self) -> None:
        """Close and delete the file unless it was verified and kept."""
        if not self._kept:
            self.close()
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> BodyWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.discard()


def _write_all(fd: int | None, chunk: bytes) -> None:
    """Write every byte: a write may write only part of a chunk (a disk filling up) and say so only
    in its return value, which would leave a file shorter than the bytes hashed. A raw descriptor,
    not a file object: opening one costs an extra system call per download."""
    if fd is None:
        raise OSError(errno.EBADF, "the temp file is closed")
    view = memoryview(chunk)
    while view:
        view = view[os.write(fd, view) :]
