"""Clients that stall `pulp-sync api`, for tests/pulp_sync/test_slow_clients.py and the benchmark beside it
(tests/benchmarks/test_slow_clients_benchmark.py): plain sockets on one selector, and no Django, so that
the benchmark imports them before it has a stack."""

from __future__ import annotations

import http.client
import selectors
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["NEVER_CLOSES", "ORDINARY", "STALLS", "Kind", "Stall", "Stalled", "authorized", "hostile", "idle",
           "non_readers", "buffer_takers", "OTHER_ADDRESS", "from_elsewhere"]

ORDINARY = "/pulp/api/v3/repositories/file/file/"
"""What ordinary clients ask: the stack's own database, not the Redis that other tests share."""
_GET = f"GET {ORDINARY} HTTP/1.1\r\n"
_AUTHORIZED = "Host: 127.0.0.1\r\nAuthorization: Token {token}\r\n"


OTHER_ADDRESS = "127.0.0.2"
"""Where ordinary clients come from, while every hostile one comes from 127.0.0.1: a bound per client
address must leave them their share."""


def from_elsewhere(base: str, token: str, timeout: float) -> tuple[int | str, float]:
    """An ordinary request from OTHER_ADDRESS: its status (or the error that stood for one) and its seconds."""
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout,
                                            source_address=(OTHER_ADDRESS, 0))
    started = time.monotonic()
    try:
        connection.request("GET", ORDINARY, headers={"Authorization": f"Token {token}"})
        status: int | str = connection.getresponse().status
    except OSError as error:
        status = repr(error)
    finally:
        connection.close()
    return status, time.monotonic() - started


def authorized(token: str) -> str:
    """The Host and Authorization fields of a request with `token`."""
    return _AUTHORIZED.replace("{token}", token)


@dataclass(frozen=True)
class Kind:
    """One way of stalling: what the client sends at once ({token} is the admin's), what it then sends
    every second until it has an answer (maybe nothing), how many such clients, what ends them."""

    name: str
    first: str
    drip: bytes
    count: int
    ends_by: str
    """"head", "body": that deadline; "answer": the server answers, then closes its side; "never": it need
    not end them (a client that never reads may be kept until its send deadline)."""
    reads: bool = True
    """Whether the client reads what the server sends; one that does not leaves the answers in the server's
    hands (and socket buffers)."""


STALLS = (
    Kind("part of the head", _GET + "Host: 127.0.0.1\r\nAuthoriz", b"", 50, "head"),
    Kind("a header byte a second", _GET + "X-Drip: ", b"a", 25, "head"),
    Kind("a header line a second", _GET, b"X-Drip: a\r\n", 25, "head"),
    Kind(
        "the head, then part of the body",
        f"POST {ORDINARY} HTTP/1.1\r\n{_AUTHORIZED}"
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name": "sta',
        b"",
        50,
        "body",
    ),
)
"""The 150 stalled requests."""
NEVER_CLOSES = Kind(
    "never closes after its answer", _GET + _AUTHORIZED + "Connection: close\r\n\r\n", b"", 30, "answer"
)
"""Clients whose requests are whole, but which leave the closing to the server."""


def idle(count: int) -> Kind:
    """Connections that send nothing at all: each takes a connection slot until the header deadline."""
    return Kind("idle", "", b"", count, "head")


def non_readers(path: str, count: int = 80, pipelined: int = 10) -> Kind:
    """Clients that ask for the file at `path` (a large one) `pipelined` times over one connection and read
    none of it: a server thread that writes the answer itself waits on them for as long as they like."""
    return Kind("never reads its answers", f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * pipelined, b"",
                count, "never", reads=False)


def buffer_takers(length: int = 2_600_000, count: int = 100, short: int = 1000) -> Kind:
    """Clients that announce a body of `length` bytes (just under the largest the API takes), send all but
    `short` of it, and stall: a server that keeps bodies in memory holds `count` of them."""
    head = (f"POST {ORDINARY} HTTP/1.1\r\n{_AUTHORIZED}Content-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n")
    return Kind("a body just short of its length", head + '{"name": "' + "x" * (length - short), b"", count, "body")


def hostile(distributed_file: str, idle_connections: int) -> tuple[Kind, ...]:
    """The whole hostile crowd of docs/reliability.md, "What a client may hold": the 150 stalled senders,
    the 30 that never close, 80 non-readers, 100 buffer takers and `idle_connections` idle ones."""
    return (*STALLS, NEVER_CLOSES, non_readers(distributed_file), buffer_takers(), idle(idle_connections))


@dataclass(eq=False)
class Stalled:
    """One stalled client: its socket (non-blocking once its first bytes are sent), what the server sent
    it, and when (seconds after it connected) the server ended the connection."""

    kind: Kind
    sock: socket.socket
    opened: float
    reply: bytes = b""
    ended: float | None = None

    @classmethod
    def open(cls, base: str, token: str, kind: Kind) -> Stalled:
        """Connect to the API at `base` and send the kind's first bytes."""
        parts = urlsplit(base)
        sock = socket.create_connection((parts.hostname, parts.port), timeout=5)
        opened = time.monotonic()
        try:
            sock.sendall(kind.first.replace("{token}", token).encode())
        except OSError:
            pass  # refused early (a body over a bound) or not read on: what it sent is what it holds
        sock.setblocking(False)
        return cls(kind, sock, opened)

    def read(self) -> None:
        """Take what the server sent; its end of the connection closed if nothing."""
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self.reply += data
        if not data:
            self.ended = time.monotonic() - self.opened

    def drip(self) -> None:
        if self.kind.drip and not self.reply and self.ended is None:
            try:
                self.sock.send(self.kind.drip)
            except OSError:
                pass  # reset: the next read says it ended


class Stall:
    """Stalled clients of `kinds` against the API at `base`; `pump` keeps them going. With `reopen`, a
    client the server ended is replaced by a fresh one of its kind, as an attacker would."""

    def __init__(self, base: str, token: str, kinds: tuple[Kind, ...], reopen: bool = False) -> None:
        self._base, self._token, self._reopen = base, token, reopen
        self._selector = selectors.DefaultSelector()
        self._next_drip = time.monotonic() + 1
        self._unread: list[Stalled] = []
        self.clients: list[Stalled] = []
        """Every client opened, ended or not."""
        for kind in kinds:
            for _ in range(kind.count):
                self._open(kind)

    def _open(self, kind: Kind) -> None:
        client = Stalled.open(self._base, self._token, kind)
        self.clients.append(client)
        if kind.reads:
            self._selector.register(client.sock, selectors.EVENT_READ, client)
        else:
            self._unread.append(client)

    def pump(self, seconds: float) -> None:
        """Drip every second and read what the server sends, for `seconds` or until it ended them all."""
        until = time.monotonic() + seconds
        while self._selector.get_map() and time.monotonic() < until:
            timeout = max(0.0, min(self._next_drip, until) - time.monotonic())
            for key, _ in self._selector.select(timeout):
                self._read(key.data)
            if time.monotonic() >= self._next_drip:
                for key in list(self._selector.get_map().values()):
                    key.data.drip()
                self._next_drip += 1

    def _read(self, client: Stalled) -> None:
        client.read()
        if client.ended is not None:
            self._selector.unregister(client.sock)
            client.sock.close()
            if self._reopen:
                self._open(client.kind)

    def close(self) -> None:
        for key in list(self._selector.get_map().values()):
            key.data.sock.close()
        for client in self._unread:
            client.sock.close()
        self._selector.close()
