"""The remote-address policy: which hosts and addresses a download may connect to.

A sync service fetches URLs its users give it. Without a policy, any user can make it connect to
whatever the service's machine reaches: a cloud's metadata service at 169.254.169.254 (which hands
out the machine's credentials), an admin interface on the internal network. The policy is checked
on the URL's host before any connection (its name, or the address it spells), and on every address
the host resolves to, just before connecting to it, so a DNS name cannot smuggle a refused address
past the first check. Every redirect is a new URL and goes through both checks again.

An entry of a list is a network (`10.0.0.0/8`, `fd00::/8`, one address `192.0.2.7`) or a host name
(`mirror.example.com`, exactly; `.example.com` or `*.example.com`, any name under it). A host is
refused when it, or the address being connected to, matches a `deny` entry; when `allow` is not
empty, it is refused unless it or the address matches an `allow` entry. Deny wins over allow. By
default nothing is allowed-only and link-local is denied (`defaults.DENIED_NETWORKS`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from downloaders import defaults
from downloaders.errors import AddressRefused

__all__ = ["AddressPolicy"]

_REMEMBERED = 4096
"""Verdicts a policy keeps (a dict written from several threads: each write is atomic, a lost one harmless)."""

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class _Entries:
    """One list of the policy, parsed: its networks and its host names (exact, and suffixes)."""

    networks: tuple[_Network, ...]
    names: frozenset[str]
    suffixes: tuple[str, ...]

    @classmethod
    def parse(cls, entries: Iterable[str], which: str) -> _Entries:
        """The entries (as `_written` leaves them: stripped, none empty) sorted into networks, names and
        suffixes; ValueError naming `which` list and the first entry that is none of them."""
        networks: list[_Network] = []
        names: set[str] = set()
        suffixes: list[str] = []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            name = entry.lower().rstrip(".")
            if name.startswith(("*.", ".")):
                suffixes.append("." + name.lstrip("*."))
            elif _is_host_name(name):
                names.add(name)
            else:
                raise ValueError(f"{which}: {entry!r} is neither a network (10.0.0.0/8), an address nor a host name")
        return cls(tuple(networks), frozenset(names), tuple(suffixes))

    def matches(self, host: str, address: _Address | None) -> bool:
        """Whether the host's name or the address is in this list."""
        if address is not None and any(address in network for network in self.networks):
            return True
        return host in self.names or host.endswith(self.suffixes)


def _written(entries: Iterable[str]) -> tuple[str, ...]:
    """The entries as written, without the empty ones that "" or "a,,b" split into: an allow list of nothing
    but those is no allow list, and allows any host."""
    return tuple(stripped for stripped in (entry.strip() for entry in entries) if stripped)


@dataclass(frozen=True)
class AddressPolicy:
    """The hosts and networks a downloader may reach (see the module's docstring for the rules).

    Part of `DownloaderSettings` (`address_policy`), set by the service that runs the downloads, never
    by a remote: a user who could widen it would defeat it.
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = defaults.DENIED_NETWORKS
    _allowed: _Entries = field(init=False, repr=False, compare=False)
    _denied: _Entries = field(init=False, repr=False, compare=False)
    _verdicts: dict[tuple[str, str | None], str | None] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "allow", _written(self.allow))
        object.__setattr__(self, "deny", _written(self.deny))
        object.__setattr__(self, "_allowed", _Entries.parse(self.allow, "allow"))
        object.__setattr__(self, "_denied", _Entries.parse(self.deny, "deny"))

    @classmethod
    def parse(cls, allow: str | None, deny: str | None) -> AddressPolicy:
        """From comma-separated lists (an environment variable's); None keeps the default of that list,
        an empty text makes it empty (`deny=""` allows link-local). Raises ValueError naming a bad entry."""
        return cls(
            allow=() if allow is None else tuple(allow.split(",")),
            deny=defaults.DENIED_NETWORKS if deny is None else tuple(deny.split(",")),
        )

    def refusal(self, host: str, address: str | None = None) -> str | None:
        """`_judge`'s verdict, remembered for the first _REMEMBERED (host, address) pairs: every file of a
        manifest is on the same host, and judging one again costs more than its share of a small download."""
        key = (host, address)
        if key in self._verdicts:
            return self._verdicts[key]
        verdict = self._judge(host, address)
        if len(self._verdicts) < _REMEMBERED:
            self._verdicts[key] = verdict
        return verdict

    def _judge(self, host: str, address: str | None) -> str | None:
        """Why connecting to `host` (at `address`, when resolved) is refused, or None when it is allowed.

        `host` is a URL's host: a name, or an address (an IPv6 one with or without brackets). An IPv6
        address that maps an IPv4 one (::ffff:169.254.169.254) is judged as that IPv4 address. A name
        judged before it is resolved is not refused for being absent from an allow list that has
        networks: the addresses it resolves to, checked when connecting, may be in them.
        """
        name = host.strip("[]").lower().rstrip(".")
        ip = _address(address) if address is not None else _address(name)
        shown = name if ip is None or str(ip) == name else f"{name} ({ip})"
        if self._denied.matches(name, ip):
            return f"{shown} is denied by the remote-address policy"
        unresolved = ip is None and bool(self._allowed.networks)
        if self.allow and not unresolved and not self._allowed.matches(name, ip):
            return f"{shown} is not in the remote-address policy's allow list"
        return None

    def check_url(self, url: str) -> None:
        """Refuse a URL whose host (its name, or the address it spells) the policy refuses; no DNS lookup."""
        self.check(url, urlsplit(url).hostname or "")

    def check(self, url: str, host: str, address: str | None = None) -> None:
        """Raise AddressRefused (naming `url`) when `host`, at `address` if given, is refused."""
        reason = self.refusal(host, address)
        if reason is not None:
            raise AddressRefused(url, f"not fetched: {reason}")


def _address(text: str) -> _Address | None:
    """The address `text` spells (IPv4-mapped IPv6 as IPv4, a zone index dropped), or None for a name."""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_host_name(name: str) -> bool:
    """Letters, digits, hyphens and dots, as DNS names are; anything else is a typo in a list."""
    return bool(name) and all(part and all(c.isalnum() or c == "-" for c in part) for part in name.split("."))
