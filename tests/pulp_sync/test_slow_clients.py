"""`pulp-sync api` beside hostile clients (docs/reliability.md, "What a client may hold of the API"): nginx
before gunicorn bounds what each client address may hold, so clients from one address that stall, never
read, take buffers or connection slots leave clients from another address their answers.

150 connections that send part of a request's head, drip it a byte or a line a second, or stall in the
body, and 30 that never close after their answer, must be ended at their deadlines; beside them, 80 that
never read their answers, 100 that send all but the end of a large body and 1,100 idle connections
reopened as they expire (all from 127.0.0.1) must not keep ordinary requests from 127.0.0.2 waiting. The
stacks here have the deadlines short (PULP_SYNC_API_HEADER_TIMEOUT, PULP_SYNC_API_BODY_TIMEOUT) so that the
tests end within seconds; tests/benchmarks/test_slow_clients_benchmark.py measures the latency of ordinary
requests beside the same crowd with the production deadlines.
"""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.pulp_sync.stalled_clients import (
    NEVER_CLOSES,
    ORDINARY,
    STALLS,
    Stall,
    authorized,
    from_elsewhere,
    hostile,
)
from tests.pulp_sync.test_api import PULP_SYNC, Api, api_url, distribute, running, running_api, unique

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
DEADLINES = {"head": HEADER_TIMEOUT, "body": BODY_TIMEOUT, "answer": 0.0}
ENDED_WITH = {"head": (b"", b"HTTP/1.1 408 "), "body": (b"", b"HTTP/1.1 408 ", b"HTTP/1.1 429 "),
              "answer": (b"HTTP/1.1 200 ", b"HTTP/1.1 429 ")}
"""How nginx ends each kind: a request not in by its deadline is closed (reset: nginx sends nothing, or a
408); a whole request gets its answer, and one past the requests its address may have in progress (the
stalled bodies hold 32) gets 429 at once, before its body is read."""


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
        answers = [pool.submit(from_elsewhere, slow_api.base, slow_api.token, ANSWER_WITHIN)
                   for _ in range(ORDINARY_REQUESTS)]
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
        expected = ENDED_WITH[kind.ends_by]
        wrong = [client.reply[:40] for client in mine if not client.reply.startswith(expected)]
        wrong = [reply for reply in wrong if reply or b"" not in expected]
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
def test_a_stopping_api_closes_the_requests_it_is_still_reading(tmp_path: Path) -> None:
    env = {**os.environ, "PULP_SYNC_HOME": str(tmp_path / "home"), "DATABASE_URL": f"sqlite:///{tmp_path / 'db'}"}
    log = tmp_path / "api.log"
    with running([str(PULP_SYNC), "api", "--bind", "127.0.0.1:0", "--workers", "2"], env, log) as api:
        with closing(Stall(api_url(api, log), "", STALLS[:3])) as stall:
            stall.pump(1)  # accepted, and dripping
            started = time.monotonic()
            api.terminate()
            api.wait(timeout=STOP_WITHIN)
            stopped = time.monotonic() - started
            stall.pump(SLACK)

    assert stopped < STOP_WITHIN and api.returncode == 0
    still = [client.reply[:40] for client in stall.clients if client.ended is None]
    assert not still, f"{len(still)} of {len(stall.clients)} still open after the API stopped"


IDLE_CONNECTIONS = 1100
"""Idle connections from one address: more than the 1000 slots one worker of the front before nginx had."""
DISTRIBUTED_BYTES = 2 * 1024 * 1024
OPEN_FILES = 4096
"""Sockets the hostile test holds at once (1,100 idle, 80 non-readers, 100 buffer takers, 180 stalled,
and those reopened as the server ends them), with room to spare."""


def raise_open_files(needed: int) -> None:
    """Raise this process's open-file limit as far as its hard limit allows; skip when that is below `needed`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"the hostile clients need {needed} open files, and this machine allows {hard} (ulimit -Hn)")
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else needed, hard))


@pytest.fixture(scope="module")
def hostile_api() -> Iterator[tuple[Api, str]]:
    """One API worker, as in the reports (its budgets were per worker), short deadlines, and a 2 MiB file
    distributed at the path given."""
    raise_open_files(OPEN_FILES)
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory(prefix="pulp-sync-hostile-") as folder:
        patch.setenv("PULP_SYNC_API_HEADER_TIMEOUT", f"{HEADER_TIMEOUT:g}")
        patch.setenv("PULP_SYNC_API_BODY_TIMEOUT", f"{BODY_TIMEOUT:g}")
        with running_api("sqlite", Path(folder), workers=1) as stack:
            yield stack, distribute(stack, "big.bin", os.urandom(DISTRIBUTED_BYTES))


def paced_from_elsewhere(api: Api, delay: float) -> tuple[int | str, float]:
    time.sleep(delay)
    return from_elsewhere(api.base, api.token, ANSWER_WITHIN)


@pytest.mark.slow
def test_hostile_clients_leave_other_addresses_their_answers(hostile_api: tuple[Api, str]) -> None:
    """80 clients that never read their answers (10 pipelined GETs of a 2 MiB file each), 100 that send all
    but the end of a 2.6 MB body, 1,100 idle connections reopened as they expire, and the 180 stalled
    senders, all from 127.0.0.1: ordinary requests from 127.0.0.2, spread over more than a header deadline,
    are each answered within a bound a busy machine cannot break."""
    api, big = hostile_api
    *others, idle = hostile(big, IDLE_CONNECTIONS)
    with (closing(Stall(api.base, api.token, (idle,), reopen=True)) as flood,
          closing(Stall(api.base, api.token, tuple(others))) as crowd):
        with ThreadPoolExecutor(4) as pool:
            spread = (HEADER_TIMEOUT + 2) / ORDINARY_REQUESTS
            answers = [pool.submit(paced_from_elsewhere, api, n * spread) for n in range(ORDINARY_REQUESTS)]
            while not all(answer.done() for answer in answers):
                flood.pump(0.25)
                crowd.pump(0.25)
        answered = [answer.result() for answer in answers]

    held = len(flood.clients) + len(crowd.clients)
    slow = [(status, round(seconds, 1)) for status, seconds in answered if status != 200 or seconds > ANSWER_WITHIN]
    assert not slow, f"ordinary requests from elsewhere beside {held} hostile clients: {slow}"
