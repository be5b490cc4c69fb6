"""The API's front: gunicorn's gthread worker, except that a connection reaches a request thread only
once it has sent a whole request, as nginx or Apache in front of gunicorn would have it.

gthread hands a connection to a thread as soon as it is readable, and the thread then blocks reading
the rest: about 80 clients that sent part of a request and stalled, or dripped a header a second, held
every thread of `pulp-sync api` for as long as they liked. Here the worker's main loop reads requests
itself, without blocking (its selector already watches every socket), and ends each one that is not
whole in time: the head within `header_timeout`, then the body within `body_timeout`, in all rather
than between reads, so a client dripping a byte a second is ended too (408 Request Timeout). A stalled
client costs a connection slot and its bytes, never a thread; the slots are gunicorn's
worker_connections, the bytes a budget per worker. The thread then parses the request from memory
(gunicorn's own parser, its limits and errors), so it cannot wait on the client even where this front
and gunicorn read a malformed request differently. A connection closing after its answer lingers in the
loop too, where gunicorn's close_graceful blocked the loop for up to 2 s per client that did not close,
and a stopping worker ends the requests it is still reading (503), where it waited for them until it
was killed.

It speaks plain HTTP/1.1, which is what `pulp-sync api` serves (pulp_sync/api/server.py): no TLS and no
HTTP/2 are configured there.
"""

from __future__ import annotations

import heapq
import itertools
import re
import selectors
import socket
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.conf import settings
from gunicorn import util
from gunicorn.http.parser import RequestParser
from gunicorn.workers.gthread import TConn, ThreadWorker

from pulp_sync import defaults

__all__ = ["BufferingWorker", "FrontLimits"]

_READ_BYTES = 64 * 1024
"""The most one read takes from a socket."""
_LINGER_BYTES = 64 * 1024
"""The most a lingering connection may still send before it is cut (as gunicorn's close_graceful)."""
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]+")
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def _receive(sock: socket.socket) -> bytes | None:
    """What the client sent: b"" once it closed (or reset) its side, None if there is nothing yet."""
    try:
        return sock.recv(_READ_BYTES)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


@dataclass(frozen=True)
class FrontLimits:
    """What a client may take of one API worker while it sends a request."""

    header_timeout: float
    body_timeout: float
    head_bytes: int
    body_bytes: int
    buffered_bytes: int
    linger: float

    @classmethod
    def from_settings(cls) -> FrontLimits:
        """The deadlines of the environment (pulp_sync.settings). The largest body is Django's bound on a
        body read whole (DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MiB), which DRF's JSON parser does not apply: the
        front is where the API's bodies are bounded, before they are held in memory."""
        return cls(
            header_timeout=settings.PULP_SYNC_API_HEADER_TIMEOUT,
            body_timeout=settings.PULP_SYNC_API_BODY_TIMEOUT,
            head_bytes=defaults.API_HEAD_BYTES,
            body_bytes=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
            buffered_bytes=defaults.API_BUFFERED_BYTES,
            linger=defaults.API_LINGER,
        )


class _Unframed(ValueError):
    """A chunked body whose framing is broken: gunicorn's parser gets it as it is, and answers 400."""


@dataclass
class _Length:
    """A body of Content-Length bytes (0 without one)."""

    start: int
    length: int

    @property
    def reach(self) -> int:
        """Where the body is known to end at least."""
        return self.start + self.length

    def complete(self, data: bytearray) -> bool:
        return len(data) >= self.reach


@dataclass
class _Chunked:
    """A chunked body: chunks until one of size 0, then trailer fields and an empty line. The scan
    resumes where it stopped, so a body sent a few bytes at a time is read once, not once per read."""

    start: int
    reach: int = field(init=False)
    """Where the next chunk-size line starts, or (`trailers`) the CRLF before the trailer fields."""
    scanned: int = field(init=False)
    trailers: bool = False

    def __post_init__(self) -> None:
        self.reach = self.scanned = self.start

    def complete(self, data: bytearray) -> bool:
        """Whether the whole body is in; _Unframed if a chunk size is not hex."""
        while not self.trailers:
            if len(data) < self.reach:
                return False  # inside a chunk's data
            line_end = data.find(b"\r\n", max(self.reach, self.scanned - 1))
            if line_end < 0:
                self.scanned = len(data)
                return False
            size = bytes(data[self.reach : line_end]).split(b";", 1)[0].strip(b" \t")
            if not _CHUNK_SIZE.fullmatch(size):
                raise _Unframed(size)
            self.trailers = int(size, 16) == 0
            self.reach = self.scanned = line_end if self.trailers else line_end + 2 + int(size, 16) + 2
        if data.find(b"\r\n\r\n", max(self.reach, self.scanned - 3)) >= 0:
            return True
        self.scanned = len(data)
        return False


@dataclass(frozen=True)
class _Head:
    """What the front needs of a request's head: how its body ends, and whether the client waits for
    100 Continue before sending it."""

    body: _Length | _Chunked
    expects_continue: bool

    @classmethod
    def parse(cls, head: bytes, body_start: int) -> _Head:
        """Framing as RFC 9112 has it: chunked if Transfer-Encoding ends with it, else a Content-Length
        of digits. Anything else (another coding, two lengths, a length that is not a number) is read as
        a request without a body: gunicorn's parser refuses it with a 400 from what it has."""
        lines = head.split(b"\r\n")
        fields: dict[bytes, list[bytes]] = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            fields.setdefault(name.strip().lower(), []).append(value.strip(b" \t").lower())
        codings = b",".join(fields.get(b"transfer-encoding", [])).split(b",")
        lengths = fields.get(b"content-length", [])
        body: _Length | _Chunked = _Length(body_start, 0)
        if codings[-1].strip(b" \t") == b"chunked":
            body = _Chunked(body_start)
        elif b"transfer-encoding" not in fields and len(lengths) == 1 and lengths[0].isdigit():
            body = _Length(body_start, int(lengths[0]))
        expects = lines[0].endswith(b" HTTP/1.1") and b"100-continue" in fields.get(b"expect", [])
        return cls(body, expects)


@dataclass(eq=False)
class _Held:
    """A connection in the front: reading a request (`data` so far, `head` once it is in), or lingering
    after its last answer. `over` once it left the front, which makes its deadlines stale."""

    conn: TConn
    deadline: float = 0.0
    data: bytearray = field(default_factory=bytearray)
    scanned: int = 0
    head: _Head | None = None
    lingering: bool = False
    drained: int = 0
    over: bool = False


class BufferingWorker(ThreadWorker):
    """gthread with the front: every path by which gthread gives a connection to a thread (accept, a
    kept-alive connection becoming readable, bytes left after a request) goes through `enqueue_req`,
    which here reads the request first."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limits = FrontLimits.from_settings()
        self._deadlines: list[tuple[float, int, _Held]] = []
        self._order = itertools.count()
        self._buffered = 0

    def enqueue_req(self, conn: TConn) -> None:
        """Read the connection's next request in the main loop, beginning with any bytes the last one
        left behind (a client may send its next request before the answer)."""
        parser = conn.parser  # None on a new connection, else the one `_to_thread` gave it
        left = parser.unreader.take_buffered() if isinstance(parser, RequestParser) else b""
        held = _Held(conn, data=bytearray(left))
        self._buffered += len(held.data)
        conn.sock.setblocking(False)
        self._watch(held, self._limits.header_timeout, self._readable)
        self._advance(held)

    def finish_request(self, conn: TConn, fs: Future[Any]) -> None:
        """A connection that goes on is gthread's (kept alive, or straight back to `enqueue_req`); one that
        ends lingers here, instead of in close_graceful, which blocks the loop until the client closes."""
        if fs.cancelled() or fs.exception() is not None or not fs.result():
            self._linger(_Held(conn))
        else:
            super().finish_request(conn, fs)

    def murder_pending(self) -> None:
        """gthread's loop calls this at least once a second, a stopping worker's too: the front's deadlines
        are kept here. A stopping worker ends the requests it is still reading at once, where it would
        wait for them up to graceful_timeout (30 s) and then be killed: they have no answer to lose."""
        super().murder_pending()
        now = time.monotonic()
        while self._deadlines and self._deadlines[0][0] <= now:
            deadline, _, held = heapq.heappop(self._deadlines)
            if not held.over and held.deadline == deadline:
                self._expire(held)
        if not self.alive:
            for _, _, held in list(self._deadlines):
                if not held.over and not held.lingering:
                    self._stop_reading(held)

    def _watch(self, held: _Held, seconds: float, callback: Any) -> None:
        """Read the connection with `callback` for `seconds` from now at most."""
        self.poller.register(held.conn.sock, selectors.EVENT_READ, partial(callback, held))
        self._set_deadline(held, seconds)

    def _set_deadline(self, held: _Held, seconds: float) -> None:
        held.deadline = time.monotonic() + seconds
        heapq.heappush(self._deadlines, (held.deadline, next(self._order), held))

    def _let_go(self, held: _Held) -> None:
        """The connection leaves the front: to a thread, to lingering, or closed."""
        held.over = True
        self._buffered -= len(held.data)
        self.poller.unregister(held.conn.sock)

    def _readable(self, held: _Held, sock: socket.socket) -> None:
        data = _receive(sock)
        if data is None:
            return
        if not data:
            self._close(held)  # gone before the request was whole: nobody to answer
            return
        held.data += data
        self._buffered += len(data)
        if self._buffered > self._limits.buffered_bytes:
            self._refuse(held, 503, "Service Unavailable", "The server holds too many unfinished requests.")
        else:
            self._advance(held)

    def _advance(self, held: _Held) -> None:
        """Hand the request to a thread once it is whole, refuse one that grew too large; when its head
        has just come in, its body's deadline starts."""
        head_was_in = held.head is not None
        if not head_was_in and not self._read_head(held):
            return
        assert held.head is not None
        body = held.head.body
        try:
            complete = body.complete(held.data)
        except _Unframed:
            complete = True  # gunicorn's parser answers it
        if complete:
            self._hand_over(held)
        elif max(body.reach, len(held.data)) - body.start > self._limits.body_bytes:
            self._refuse(
                held, 413, "Content Too Large", f"A request body takes {self._limits.body_bytes} bytes at most."
            )
        elif not head_was_in:
            self._set_deadline(held, self._limits.body_timeout)
            if held.head.expects_continue:
                self._send(held.conn, _CONTINUE)

    def _read_head(self, held: _Held) -> bool:
        """Whether the head is in (then `held.head` says how the body ends)."""
        end = held.data.find(b"\r\n\r\n", max(0, held.scanned - 3))
        if end >= 0:
            held.head = _Head.parse(bytes(held.data[:end]), end + 4)
            return True
        held.scanned = len(held.data)
        if held.scanned > self._limits.head_bytes:
            self._refuse(held, 431, "Request Header Fields Too Large", "The request's head is too large.")
        return False

    def _hand_over(self, held: _Held) -> None:
        """To a thread, with the bytes read so far as the only source of its parser."""
        self._let_go(held)
        conn = held.conn
        conn.parser = RequestParser(self.cfg, [bytes(held.data)], conn.client)
        conn.data_ready = True  # no need for gthread's wait for a first byte
        super().enqueue_req(conn)

    def _expire(self, held: _Held) -> None:
        if held.lingering or not held.data:
            self._close(held)  # done, or never said a thing: nothing to answer
        else:
            seconds = self._limits.body_timeout if held.head is not None else self._limits.header_timeout
            self._refuse(held, 408, "Request Timeout", f"The request was not complete after {seconds:g} s.")

    def _stop_reading(self, held: _Held) -> None:
        if held.data:
            self._refuse(held, 503, "Service Unavailable", "The server is stopping.")
        else:
            self._close(held)

    def _refuse(self, held: _Held, status: int, reason: str, message: str) -> None:
        """Answer and close, without reading the rest of the request."""
        self.log.info("%s %s to %s after %d bytes", status, reason, held.conn.client, len(held.data))
        self._let_go(held)
        try:
            util.write_error(held.conn.sock, status, reason, message)
        except OSError:
            pass  # the client does not take its answer: closed all the same
        self._linger(_Held(held.conn))

    def _linger(self, held: _Held) -> None:
        """Half-close, then read and drop what the client still sends until it closes or `linger` passes."""
        held.lingering = True
        try:
            held.conn.sock.setblocking(False)
            held.conn.sock.shutdown(socket.SHUT_WR)
        except OSError:  # closed already (gunicorn closes a connection whose answer failed half-way)
            self._close_socket(held.conn)
            return
        self._watch(held, self._limits.linger, self._drain)

    def _drain(self, held: _Held, sock: socket.socket) -> None:
        data = _receive(sock)
        if data is None:
            return
        held.drained += len(data)
        if not data or held.drained > _LINGER_BYTES:
            self._close(held)

    def _send(self, conn: TConn, data: bytes) -> None:
        try:
            conn.sock.send(data)
        except OSError:
            pass  # the client will wait for its body's deadline, as if it had not asked

    def _close(self, held: _Held) -> None:
        self._let_go(held)
        self._close_socket(held.conn)

    def _close_socket(self, conn: TConn) -> None:
        self.nr_conns -= 1
        conn.close()
