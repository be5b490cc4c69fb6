"""BodyWriter: a body streamed to a temp file while its size and sha256 are checked."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from types import TracebackType

from downloaders.errors import DigestMismatch, SizeMismatch
from downloaders.types import DownloadRequest

__all__ = ["BodyWriter"]


class BodyWriter:
    """Writes one attempt's body into a fresh temp file; removes it unless `finish` verifies it.

    Used as a context manager: leaving the block without a successful `finish` (an error, a
    cancellation) deletes the file, so no partial download survives any failure.
    """

    def __init__(self, request: DownloadRequest, temp_dir: Path) -> None:
        self.request = request
        fd, name = tempfile.mkstemp(dir=temp_dir, prefix=".download-", suffix=".part")
        self.path = Path(name)
        self._file = os.fdopen(fd, "wb", buffering=0)
        self._hash = hashlib.sha256()
        self.size = 0
        self._kept = False

    def write(self, chunk: bytes) -> None:
        """Append a chunk; fail as soon as the body grows past the expected size."""
        self.size += len(chunk)
        expected = self.request.size
        if expected is not None and self.size > expected:
            raise SizeMismatch(self.request.url, expected, self.size)
        self._hash.update(chunk)
        self._file.write(chunk)

    def finish(self) -> str:
        """Close and verify the file; returns its sha256. The file is kept only if this succeeds."""
        self._file.close()
        digest = self._hash.hexdigest()
        expected_size, expected_digest = self.request.size, self.request.sha256
        if expected_size is not None and self.size != expected_size:
            raise SizeMismatch(self.request.url, expected_size, self.size)
        if expected_digest is not None and digest != expected_digest.lower():
            raise DigestMismatch(self.request.url, expected_digest, digest)
        self._kept = True
        return digest

    def __enter__(self) -> "BodyWriter":
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if not self._kept:
            self._file.close()
            self.path.unlink(missing_ok=True)
