"""A child of a split sync (pulp_sync.shards): `python -m pulp_sync.shard`, started by the sync's process.

It reads its job, one JSON line, on stdin; downloads, verifies, adopts and records its shard's artifacts
through the remote's downloader, as an unsplit sync does (pulp_sync.sync.download_shard); and writes
JSON lines on stdout: {"progress": [files, bytes]} a few times a second, then {"done": counts} or
{"failed": {"message": ..., "counts": ...}}. Anything else it has to say goes to stderr, as the
sync's own logging does.

It never outlives its sync: when stdin reaches its end (the parent closed it, or died however it
died) it ends at once, and Ctrl-C on a terminal, which reaches the whole process group, ends it
without a traceback: the parent says what happened. SIGTERM, which the parent sends when another
shard failed or the sync was stopped, ends it as it would end an unsplit sync: the files it verified
are adopted and recorded on the way out, so the next sync need not fetch them again.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from pulp_sync import defaults

__all__ = ["main", "PipeProgress"]


class _Stopped(BaseException):
    """SIGTERM: unwind (a BaseException, so no handler of errors takes it for a failure), recording what
    was downloaded on the way (the sync's `finally`)."""


def _stop(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


class PipeProgress:
    """A ProgressSink that sends the files and bytes done since its last line, at most every
    `defaults.SHARD_PROGRESS_SECONDS` (and at the end), so the parent's progress stays current
    without a line per file."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._files = 0
        self._bytes = 0
        self._sent = time.monotonic()

    def start(self, total_artifacts: int, total_bytes: int) -> None:
        self._sent = time.monotonic()

    def advance(self, artifacts: int, bytes: int) -> None:
        self._files += artifacts
        self._bytes += bytes
        if time.monotonic() - self._sent >= defaults.SHARD_PROGRESS_SECONDS:
            self.finish()

    def finish(self) -> None:
        if self._files or self._bytes:
            send(self._out, {"progress": [self._files, self._bytes]})
        self._files = self._bytes = 0
        self._sent = time.monotonic()


def send(out: IO[str], message: dict[str, Any]) -> None:
    """One JSON line to the parent (ASCII only, so the parent's reads never split a character)."""
    out.write(json.dumps(message, ensure_ascii=True) + "\n")
    out.flush()


def main() -> int:
    """Run the job on stdin; 0 when the shard was synced, 1 when it failed (and said why on stdout)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, _stop)
    job = json.loads(sys.stdin.readline())
    threading.Thread(target=_end_with_parent, args=(sys.stdin,), name="parent", daemon=True).start()
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but the protocol on the parent's pipe

    import pulp_sync  # Django set up before the models are imported

    pulp_sync.setup()
    from pulp_sync.messages import one_line
    from pulp_sync.models import Remote
    from pulp_sync.sync import DownloadStopped, download_shard

    progress = PipeProgress(out)
    try:
        counts = download_shard(Remote.objects.get(pk=job["remote_id"]), Path(job["spool"]), job["files"],
                                job["bytes"], job["manifest_url"], job["workspace_prefix"], progress)
    except DownloadStopped as stopped:
        send(out, {"failed": {"message": str(stopped), "counts": stopped.counts.as_dict()}})
        return 1
    except Exception as error:  # noqa: BLE001 - told to the parent, which fails the sync with it
        send(out, {"failed": {"message": f"{type(error).__name__}: {one_line(error)}", "counts": {}}})
        return 1
    except _Stopped:
        return 128 + signal.SIGTERM
    send(out, {"done": counts.as_dict()})
    return 0


def _end_with_parent(stdin: IO[str]) -> None:
    """Wait for the end of stdin, and end the process there: the parent has gone or given up on it."""
    stdin.read()
    os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
