"""Errors as people and API users see them: printable, bounded, and no window onto what a remote answered."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pulp_sync.messages import MAX_RECORDED_CHARS, for_the_record
from pulp_sync.models import Remote, Repository, TaskState
from pulp_sync.tasking.tasks import dispatch_sync

NOT_HTTP = b"-ERR unknown command \x1b[31m" + b"\x00\x01secret-of-the-port " * 4000 + b"\r\n"
"""What a service that is not HTTP (a Redis, an admin console) answers: text, escape sequences and raw
bytes, far longer than any error of ours."""


def test_the_record_escapes_what_does_not_print_and_is_bounded() -> None:
    assert for_the_record("HTTP 502 Bad \x1b[2J\x00Gateway") == "HTTP 502 Bad \\x1b[2J\\x00Gateway"
    assert for_the_record("é ✓ fine") == "é ✓ fine"
    cut = for_the_record("x" * 5000)
    assert len(cut) == MAX_RECORDED_CHARS and cut.endswith("…")


@pytest.fixture
def not_http() -> Iterator[str]:
    """A TCP server on 127.0.0.1 that answers every connection with NOT_HTTP; its URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def answer() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.recv(65536)
                connection.sendall(NOT_HTTP)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/PULP_MANIFEST"
    finally:
        stop.set()
        thread.join()
        listener.close()


@pytest.mark.parametrize("downloader", ["asyncio", "futures"])
def test_a_task_never_records_a_remotes_answer_raw_or_whole(db: Path, not_http: str, downloader: str) -> None:
    remote = Remote.objects.create(name="not-http", url=not_http, downloader=downloader, max_retries=0)
    task = dispatch_sync(Repository.objects.create(name="not-http"), remote)

    assert task.state == TaskState.FAILED
    assert task.error.isprintable() and len(task.error) <= MAX_RECORDED_CHARS, task.error
    assert task.error.count("secret-of-the-port") <= 5, "at most a short quote of what the port answered"

