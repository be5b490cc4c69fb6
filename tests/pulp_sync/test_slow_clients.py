"""`pulp-sync api` beside clients that stall (docs/reliability.md, "Slow clients"): 150 connections that
send part of a request's head, drip it a byte or a line a second, or stall in the body, and 30 that never
close after their answer, must neither keep ordinary requests waiting nor stay open past their deadline.

About 80 such clients held every thread of plain gthread, and one was still open after 70 s. The
stack here has the deadlines short (PULP_SYNC_API_HEADER_TIMEOUT, PULP_SYNC_API_BODY_TIMEOUT) so that
the test ends within seconds; tests/benchmarks/test_slow_clients_benchmark.py measures the latency of
ordinary requests under the same stall with the production deadlines.
"""

from __future__ import annotations

import json
import os
import re
import socket
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import urllib3

from pulp_sync import defaults
from pulp_sync.api.front import _Chunked, _Unframed
from tests.pulp_sync.stalled_clients import NEVER_CLOSES, ORDINARY, STALLS, Stall, authorized
from tests.pulp_sync.test_api import PULP_SYNC, Api, api_url, running, running_api, unique

HEADER_TIMEOUT = 3.0
BODY_TIMEOUT = 3.0
SLACK = 10.0
"""Seconds past its deadline a stalled connection may still be open: the front looks at its deadlines
once a second, and a busy machine is late with the rest."""
ANSWER_WITHIN = 30.0
"""Seconds an ordinary request may take beside the stall; it takes milliseconds, and took forever."""
ORDINARY_REQUESTS = 20
STOP_WITHIN = 15.0
"""Seconds a stopping API may take beside stalled clients: a few, where it waited for gunicorn's
graceful_timeout (30 s) and was killed."""
STATUS = "/pulp/api/v3/status/"
KINDS = (*STALLS, NEVER_CLOSES)
DEADLINES = {"head": HEADER_TIMEOUT, "body": BODY_TIMEOUT, "answer": defaults.API_LINGER}


def timed_status(api: Api) -> tuple[int | str, float]:
    """An ordinary request: its status (or the error that stood for one) and its seconds."""
    started = time.monotonic()
    try:
        status: int | str = api.call("GET", ORDINARY).status
    except urllib3.exceptions.HTTPError as error:
        status = repr(error)
    return status, time.monotonic() - started


@pytest.fixture(scope="module")
def slow_api() -> Iterator[Api]:
    """A sqlite stack whose API ends stalled requests after a few seconds."""
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory(prefix="pulp-sync-slow-") as folder:
        patch.setenv("PULP_SYNC_API_HEADER_TIMEOUT", f"{HEADER_TIMEOUT:g}")
        patch.setenv("PULP_SYNC_API_BODY_TIMEOUT", f"{BODY_TIMEOUT:g}")
        with running_api("sqlite", Path(folder)) as stack:
            yield stack


@pytest.mark.slow
def test_stalled_clients_neither_hold_the_api_nor_stay(slow_api: Api) -> None:
    with closing(Stall(slow_api.base, slow_api.token, KINDS)) as stall, ThreadPoolExecutor(4) as pool:
        answers = [pool.submit(timed_status, slow_api) for _ in range(ORDINARY_REQUESTS)]
        stall.pump(max(DEADLINES.values()) + SLACK)
        answered = [answer.result() for answer in answers]
    clients = stall.clients

    slow = [(status, round(seconds, 1)) for status, seconds in answered if status != 200 or seconds > ANSWER_WITHIN]
    assert not slow, f"ordinary requests beside {len(clients)} stalled clients: {slow}"
    for kind in KINDS:
        mine = [client for client in clients if client.kind is kind]
        late = [
            client.ended for client in mine if client.ended is None or client.ended > DEADLINES[kind.ends_by] + SLACK
        ]
        assert not late, f"{kind.name}: {len(late)} of {len(mine)} still open after their deadline: {late[:5]}"
        expected = b"HTTP/1.1 200 " if kind.ends_by == "answer" else b"HTTP/1.1 408 "
        wrong = [client.reply[:40] for client in mine if not client.reply.startswith(expected)]
        assert not wrong, f"{kind.name}: {len(wrong)} did not get {expected!r}: {wrong[:3]}"


@pytest.mark.slow
def test_a_body_over_the_largest_is_refused_before_it_is_sent(slow_api: Api) -> None:
    parts = urlsplit(slow_api.base)
    with socket.create_connection((parts.hostname, parts.port), timeout=ANSWER_WITHIN) as sock:
        sock.sendall(
            f"POST {ORDINARY} HTTP/1.1\r\n{authorized(slow_api.token)}Content-Type: application/json\r\n"
            f"Content-Length: {100 * 1024 * 1024}\r\n\r\n".encode()
        )
        assert sock.recv(65536).startswith(b"HTTP/1.1 413 ")


@pytest.mark.slow
def test_continued_chunked_and_pipelined_requests_are_read_whole(slow_api: Api) -> None:
    """The front finds where each request ends as gunicorn does: a body sent in pieces after 100 Continue,
    a chunked one behind it (which Django reads as empty: the status view refuses the method anyway), and
    a third request get an answer each, in turn."""
    parts = urlsplit(slow_api.base)
    auth = authorized(slow_api.token)
    name = unique("continued")
    body = json.dumps({"name": name}).encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=ANSWER_WITHIN) as sock:
        sock.sendall(
            f"POST {ORDINARY} HTTP/1.1\r\n{auth}Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Expect: 100-continue\r\n\r\n".encode()
        )
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        pieces = [
            body[:5],
            body[5:] + f"POST {STATUS} HTTP/1.1\r\n{auth}Transfer-Encoding: chunked\r\n\r\n".encode(),
            b"4;x=y\r\nWiki\r\n",
            b"0\r\nChecksum: 1\r\n\r\n" + f"GET {ORDINARY} HTTP/1.1\r\n{auth}".encode(),
            b"Connection: close\r\n\r\n",
        ]
        for piece in pieces:
            sock.sendall(piece)
            time.sleep(0.1)
        reply = b""
        while data := sock.recv(65536):
            reply += data
    statuses = [status for status in re.findall(rb"^HTTP/1.1 (\d{3}) ", reply, re.MULTILINE) if status != b"100"]
    assert statuses == [b"201", b"405", b"200"], reply[:1000]
    assert name.encode() in reply


@pytest.mark.slow
def test_a_stopping_api_ends_the_requests_it_is_still_reading(tmp_path: Path) -> None:
    env = {**os.environ, "PULP_SYNC_HOME": str(tmp_path / "home"), "DATABASE_URL": f"sqlite:///{tmp_path / 'db'}"}
    log = tmp_path / "api.log"
    with running([str(PULP_SYNC), "api", "--bind", "127.0.0.1:0", "--workers", "2"], env, log) as api:
        with closing(Stall(api_url(api, log), "", STALLS[:3])) as stall:
            stall.pump(1)  # accepted, and dripping
            started = time.monotonic()
            api.terminate()
            stall.pump(STOP_WITHIN)
            api.wait(timeout=STOP_WITHIN)
            stopped = time.monotonic() - started

    assert stopped < STOP_WITHIN
    wrong = [client.reply[:40] for client in stall.clients if not client.reply.startswith(b"HTTP/1.1 503 ")]
    assert not wrong, f"{len(wrong)} of {len(stall.clients)} did not get 503: {wrong[:3]}"


def test_a_chunked_body_ends_after_its_trailers_however_it_is_cut() -> None:
    body = b"4;note=x\r\nWiki\r\n5\r\npedia\r\n0\r\nChecksum: 1\r\n\r\n"
    chunked = _Chunked(0)
    ends = [chunked.complete(bytearray(body[:cut])) for cut in range(1, len(body) + 1)]
    assert ends == [False] * (len(body) - 1) + [True]
    assert _Chunked(0).complete(bytearray(b"4\r\nWiki\r\n0\r\n\r\n"))
    with pytest.raises(_Unframed):
        _Chunked(0).complete(bytearray(b"0x4\r\nWiki\r\n0\r\n\r\n"))
