"""Clients that stall `pulp-sync api`, for tests/pulp_sync/test_slow_clients.py and the benchmark beside it
(tests/benchmarks/test_slow_clients_benchmark.py): plain sockets on one selector, and no Django, so that
the benchmark imports them before it has a stack."""

from __future__ import annotations

import selectors
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["NEVER_CLOSES", "ORDINARY", "STALLS", "Kind", "Stall", "Stalled", "authorized"]

ORDINARY = "/pulp/api/v3/repositories/file/file/"
"""What ordinary clients ask: the stack's own database, not the Redis that other tests share."""
_GET = f"GET {ORDINARY} HTTP/1.1\r\n"
_AUTHORIZED = "Host: 127.0.0.1\r\nAuthorization: Token {token}\r\n"


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
    """"head", "body": that deadline, with a 408; "answer": the server answers, then closes its side."""


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
        sock.sendall(kind.first.replace("{token}", token).encode())
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
        self.clients: list[Stalled] = []
        """Every client opened, ended or not."""
        for kind in kinds:
            for _ in range(kind.count):
                self._open(kind)

    def _open(self, kind: Kind) -> None:
        client = Stalled.open(self._base, self._token, kind)
        self.clients.append(client)
        self._selector.register(client.sock, selectors.EVENT_READ, client)

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
        self._selector.close()
