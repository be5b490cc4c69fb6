"""The remote-address policy where the engines connect: on the addresses a host resolves to.

A URL's host is checked by name before any request (`AddressPolicy.check_url`), but a name can
resolve to any address, 169.254.169.254 included. So each engine resolves a host itself (aiohttp
through a resolver, urllib3 through its connection classes) and connects only to the addresses the
policy allows. Through a proxy the engine connects to the proxy, whose addresses are checked alike,
and the proxy resolves the target's host: `ProxiedTargets` resolves it too, and refuses the request
when any of its addresses is refused, since any of them is where the proxy may connect.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from downloaders.addresses import AddressPolicy
from downloaders.errors import AddressRefused
from downloaders.settings import DownloaderSettings

__all__ = ["allowed_addresses", "ProxiedTargets"]

_AddressInfo = tuple[Any, ...]
"""One result of getaddrinfo: (family, type, proto, canonname, sockaddr)."""


def allowed_addresses(policy: AddressPolicy, host: str, port: int, addresses: Sequence[str]) -> list[str]:
    """The addresses of `host` the policy allows, in their order.

    AddressRefused, naming the host and every address, when it allows none (no connection is made).
    Connecting to an allowed address of a host that also has refused ones is safe: the connection
    goes exactly where it was checked. An empty `addresses` is returned as is: the library reports
    the failed lookup as it always does.
    """
    refusals = [(address, policy.refusal(host, address)) for address in addresses]
    allowed = [address for address, refusal in refusals if refusal is None]
    if addresses and not allowed:
        reasons = "; ".join(dict.fromkeys(refusal for _, refusal in refusals if refusal is not None))
        raise AddressRefused(f"{host}:{port}", f"not connected: {reasons}")
    return allowed


class ProxiedTargets:
    """Checks of the targets a proxy will connect to, for one fetch (a host is resolved once per fetch).

    Does nothing without a proxy. With one, `check(url)` (from a thread) or `check_async(url)` (on an
    event loop) refuses the URL before its request when the proxy's own URL is refused by name or
    literal address, or when any address the target's host resolves to is refused. A host that does
    not resolve here is left to the proxy when the policy only denies (its name was checked, and a
    proxy is often the only way out of a network that resolves no outside name), and refused when
    the policy has an allow list: only its addresses could show it is in it.
    """

    def __init__(self, settings: DownloaderSettings) -> None:
        self._policy = settings.address_policy
        self._proxy = settings.proxy_url
        self._addresses: dict[str, list[str]] = {}

    def check(self, url: str) -> None:
        """Refuse `url` as the class says, resolving its host in this thread (a thread-pool engine)."""
        host = self._unresolved(url)
        if host is not None:
            self._addresses[host] = _addresses(_lookup(host))
        self._refuse(url)

    async def check_async(self, url: str) -> None:
        """Refuse `url` as the class says, resolving its host without blocking the event loop."""
        host = self._unresolved(url)
        if host is not None:
            self._addresses[host] = _addresses(await _lookup_async(host))
        self._refuse(url)

    def _unresolved(self, url: str) -> str | None:
        """The URL's host if the request goes through the proxy and the host was not resolved yet."""
        if self._proxy is None:
            return None
        host = _host(url)
        return None if host in self._addresses else host

    def _refuse(self, url: str) -> None:
        if self._proxy is None:
            return
        proxy = _host(self._proxy)
        reason = self._policy.refusal(proxy)
        if reason is not None:
            raise AddressRefused(url, f"not fetched: the proxy {reason}")
        host = _host(url)
        addresses = self._addresses[host]
        if not addresses and self._policy.allow:
            raise AddressRefused(url, f"not fetched: {host} does not resolve here, so the allow list cannot be checked")
        for address in addresses:
            self._policy.check(url, host, address)


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


def _lookup(host: str) -> list[_AddressInfo]:
    try:
        return socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return []


async def _lookup_async(host: str) -> list[_AddressInfo]:
    try:
        return await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return []


def _addresses(infos: list[_AddressInfo]) -> list[str]:
    """The distinct addresses of getaddrinfo's results, in their order."""
    return list(dict.fromkeys(str(info[4][0]) for info in infos))
