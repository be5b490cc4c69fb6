"""DownloaderSettings: the knobs every downloader honours, named after pulpcore's Remote fields.

`REMOTE_SETTINGS` is the one list of the settings a Remote carries (every field but the address
policy, the engine's internal chunk size and backoff, and the derived deadline's `min_rate` and
`deadline_allowance`, which have defaults and no column in pulp-sync's database): the `pulp-sync
sync` options, the harness's `[remote]` tables and `--remote-setting` are generated from it, so a
new field cannot be forgotten by any of them.

Each Remote setting also carries its rule (`_remote(..., rule=...)`): a value no engine can use (a
header that would end the request early, a timeout past `defaults.MAX_SECONDS`, a proxy other than
http or https) is a SettingError naming the setting, raised when the settings are made and by
`RemoteSetting.coerce`, so that the command line, the API (through `Remote.clean`) and the harness's
specs refuse it alike, before any sync.
"""

from __future__ import annotations

import collections.abc
import difflib
import json
import math
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from downloaders import defaults
from downloaders.addresses import AddressPolicy
from downloaders.errors import SettingError

__all__ = [
    "DownloaderSettings",
    "RemoteSetting",
    "REMOTE_SETTINGS",
    "remote_setting",
    "parse_setting",
    "is_pem",
    "check_http_url",
    "check_header",
    "AUTO",
    "concurrency_settings",
]

AUTO = "auto"
"""`download_concurrency` as a command line, a spec or a TOML table gives it when the limit is to be found
while syncing: the Remote setting `auto_concurrency` (`concurrency_settings`)."""

_HTTP_SCHEMES = frozenset({"http", "https"})
"""The schemes every engine fetches from, and the only proxies aiohttp and urllib3 speak to."""
_MAX_DAYS = f"{defaults.MAX_SECONDS / 86400:.1f} days"

Rule = Callable[[str, Any], None]
"""Checks a setting's value (never None) under the setting's name; raises SettingError."""


_PEM_BEGIN = re.compile(r"^\s*-----BEGIN ", re.MULTILINE)


def is_pem(value: object) -> bool:
    """Whether a `ca_cert`, `client_cert` or `client_key` value is PEM text rather than a file's path.

    Pulp stores certificates and keys as text; the command line and older plugins give files. PEM
    text has a line starting `-----BEGIN `, which no sensible path has; lines before it are allowed, as
    OpenSSL allows them (`openssl pkcs12` writes "Bag Attributes" there), so that text the command
    line and the API accept is read as text here too.
    """
    return isinstance(value, str) and _PEM_BEGIN.search(value) is not None


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""A header's name: RFC 9110's token."""
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e]*")
"""A header's value that every engine sends as it is: visible ASCII, spaces and tabs. RFC 9110 forbids
CR, LF and NUL (a line break ends the header: the rest is a header, or a request, of the remote's
choosing) and other control characters (aiohttp raises ValueError on them); beyond ASCII, aiohttp
sends UTF-8, urllib3 Latin-1 or a UnicodeEncodeError, httpx and libcurl refuse."""


def check_http_url(url: str) -> None:
    """Refuse anything but an http(s) URL with a host (ValueError saying why): the only URLs every engine
    fetches from, and the only proxies every engine speaks to (aiohttp and urllib3 take no other)."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a port that is not a number from 0 to 65535
    except ValueError as error:
        raise ValueError(f"not a URL we can fetch: {error}") from error
    if parts.scheme.lower() not in _HTTP_SCHEMES or not parts.netloc:
        raise ValueError(f"only http and https URLs are fetched, not {parts.scheme or 'a bare path'!r}")


def check_header(name: object, value: object) -> None:
    """Refuse a header a request cannot carry as it is given: a name that is no RFC 9110 token, a value
    with a line break or NUL (a header injected into every request), or with a character the engines
    send differently. The message names the header, never its value (it may be a token)."""
    if not isinstance(name, str) or not isinstance(value, str):
        raise SettingError("headers: names and values are strings")
    if not _TOKEN.fullmatch(name):
        raise SettingError(f"headers: {name!r} is not a header name (letters, digits and !#$%&'*+-.^_`|~)")
    if any(c in value for c in "\r\n\0"):
        raise SettingError(f"headers: the value of {name} holds CR, LF or NUL, which would end the header early")
    if not _FIELD_VALUE.fullmatch(value):
        raise SettingError(f"headers: the value of {name} holds a character other than visible ASCII, space or "
                           "tab, which the engines send differently or not at all")


def _check_headers(name: str, headers: Mapping[str, str]) -> None:
    for header, value in headers.items():
        check_header(header, value)


def _check_concurrency(name: str, value: int) -> None:
    """Downloads in flight: 1 or more (0 would never start one), at most `defaults.MAX_DOWNLOAD_CONCURRENCY`
    (each holds a socket and a file: the reasoning is there)."""
    if not 1 <= value <= defaults.MAX_DOWNLOAD_CONCURRENCY:
        raise SettingError(f"{name} must be from 1 to {defaults.MAX_DOWNLOAD_CONCURRENCY}, not {value!r}")


def _check_not_negative(name: str, value: int) -> None:
    """A count that may be none: 0 or more."""
    if value < 0:
        raise SettingError(f"{name} must be 0 or more, not {value!r}")


def _check_seconds(name: str, value: float) -> None:
    """A timeout: positive, and no longer than every engine can wait (`defaults.MAX_SECONDS`)."""
    if not 0 < value <= defaults.MAX_SECONDS:  # NaN is neither
        raise SettingError(f"{name} must be a positive number of seconds, at most {defaults.MAX_SECONDS:.0f} "
                           f"({_MAX_DAYS}), or None for no limit, not {value!r}")


def _check_rate(name: str, value: float) -> None:
    """Requests per second: finite, and no fewer than one start in `defaults.MAX_SECONDS`, the longest
    wait between two starts every engine can make."""
    if not 1 / defaults.MAX_SECONDS <= value < math.inf:
        raise SettingError(f"{name} is requests per second, finite and at least 1/{defaults.MAX_SECONDS:.0f} "
                           f"(one in {_MAX_DAYS}), not {value!r}")


def _check_proxy_url(name: str, url: str) -> None:
    try:
        check_http_url(url)
    except ValueError as error:
        raise SettingError(f"{name}: {error} (aiohttp and urllib3 speak to no other proxy)") from error


def _remote(help: str, secret: bool = False, rule: Rule | None = None, words: tuple[str, ...] = (),
            option: bool = True) -> dict[str, Any]:
    """A field's metadata marking it a Remote setting: its help text, whether its value is a secret
    (never taken on a command line, never written to a results folder), the rule its value must pass
    besides its type, the `words` a command line or a spec may give instead of a value of the type
    (`auto` for download_concurrency), and whether it has a command-line option of its own."""
    return {"remote": True, "help": help, "secret": secret, "rule": rule, "words": words, "option": option}


def concurrency_settings(value: int | str) -> dict[str, Any]:
    """`download_concurrency` as a command line or a spec gives it, a number or AUTO, as the Remote settings
    that hold it: AUTO turns `auto_concurrency` on (and keeps `download_concurrency`, the limit of a
    downloader that cannot change its own), a number is a fixed limit and turns it off. Two settings and not
    one field of two types because Pulp's API types `download_concurrency` as an integer, which pulp-cli
    sends and every generated client reads back (docs/plugins.md)."""
    if value == AUTO:
        return {"auto_concurrency": True}
    return {"download_concurrency": value, "auto_concurrency": False}


@dataclass(frozen=True)
class DownloaderSettings:
    """Settings of one remote's downloads; checked when built, so a bad value fails before any fetch."""

    download_concurrency: int = field(default=defaults.DOWNLOAD_CONCURRENCY, metadata=_remote(
        f"Downloads in flight at once, 1 to {defaults.MAX_DOWNLOAD_CONCURRENCY}, or auto: found while syncing, "
        "up to max_concurrency.", rule=_check_concurrency, words=(AUTO,)))
    auto_concurrency: bool = field(default=False, metadata=_remote(
        "Find the downloads in flight while syncing, from a few up to max_concurrency (download_concurrency "
        "auto); a downloader that cannot change its limit keeps download_concurrency.", option=False))
    max_concurrency: int = field(default=defaults.MAX_CONCURRENCY, metadata=_remote(
        f"The most downloads in flight auto_concurrency reaches, 1 to {defaults.MAX_DOWNLOAD_CONCURRENCY}.",
        rule=_check_concurrency))
    connect_timeout: float | None = field(default=defaults.CONNECT_TIMEOUT, metadata=_remote(
        "Seconds to get a connection, waiting for a free one in the pool included.", rule=_check_seconds))
    sock_connect_timeout: float | None = field(default=defaults.SOCK_CONNECT_TIMEOUT, metadata=_remote(
        "Seconds for the TCP (and TLS) connect of a new connection.", rule=_check_seconds))
    sock_read_timeout: float | None = field(default=defaults.SOCK_READ_TIMEOUT, metadata=_remote(
        "Seconds a read may wait for the next bytes.", rule=_check_seconds))
    total_timeout: float | None = field(default=defaults.TOTAL_TIMEOUT, metadata=_remote(
        "Seconds one download attempt may take in all, body included.", rule=_check_seconds))
    max_retries: int = field(default=defaults.MAX_RETRIES, metadata=_remote(
        "Retries after the first attempt (connection errors, timeouts, 429, 5xx).", rule=_check_not_negative))
    rate_limit: float | None = field(default=None, metadata=_remote(
        "At most this many requests started per second.", rule=_check_rate))
    headers: Mapping[str, str] = field(default_factory=dict, metadata=_remote(
        "Extra request headers.", rule=_check_headers))
    username: str | None = field(default=None, metadata=_remote("User name for HTTP basic auth."))
    password: str | None = field(default=None, repr=False, metadata=_remote("Password for HTTP basic auth.", True))
    proxy_url: str | None = field(default=None, metadata=_remote(
        "HTTP(S) proxy to download through.", rule=_check_proxy_url))
    proxy_username: str | None = field(default=None, metadata=_remote("User name for the proxy."))
    proxy_password: str | None = field(default=None, repr=False, metadata=_remote("Password for the proxy.", True))
    tls_validation: bool = field(default=True, metadata=_remote("Verify the server's TLS certificate."))
    ca_cert: Path | str | None = field(default=None, metadata=_remote(
        "PEM CA bundle to verify the server with (a file, or the PEM text itself)."))
    client_cert: Path | str | None = field(default=None, metadata=_remote(
        "PEM client certificate (a file, or the PEM text itself)."))
    client_key: Path | str | None = field(default=None, repr=False, metadata=_remote(
        "PEM key of the client certificate (a file, or the PEM text itself).", True))
    address_policy: AddressPolicy = field(default_factory=AddressPolicy)
    """Which hosts and addresses may be connected to: set by the service running the downloads, never a
    Remote's setting (a user who could widen it would defeat it); see downloaders/addresses.py."""
    chunk_size: int = defaults.CHUNK_SIZE
    backoff_base: float = defaults.BACKOFF_BASE
    backoff_max: float = defaults.BACKOFF_MAX
    min_rate: float | None = defaults.MIN_RATE
    """Bytes per second: with no `total_timeout`, an attempt of a known size may take
    `deadline_allowance + size / min_rate` seconds (downloaders/deadlines.py); None: no such deadline.
    A downloader setting, not a Remote's: a Remote setting is a column of pulp-sync's database."""
    deadline_allowance: float = defaults.DEADLINE_ALLOWANCE
    """Seconds of that deadline for connecting, redirects and the headers."""

    def __post_init__(self) -> None:
        for setting in REMOTE_SETTINGS:
            value = getattr(self, setting.name)
            if value is not None:
                setting.check(value)
        if self.min_rate is not None and not (self.min_rate > 0 and math.isfinite(self.min_rate)):
            raise ValueError(f"min_rate is bytes per second, positive and finite, or None, not {self.min_rate}")
        if not (self.deadline_allowance >= 0 and math.isfinite(self.deadline_allowance)):
            raise ValueError(f"deadline_allowance is seconds, 0 or more and finite, not {self.deadline_allowance}")
        if self.chunk_size < 1024:
            raise ValueError(f"chunk_size must be at least 1024 bytes, not {self.chunk_size}")
        if (self.username is None) != (self.password is None):
            raise ValueError("username and password go together: give both or neither")
        if self.client_key is not None and self.client_cert is None:
            raise ValueError("client_key needs client_cert")

    @property
    def concurrency_bound(self) -> int:
        """The most downloads this remote's fetch has in flight at once: `max_concurrency` when its limit is
        found while it runs (`auto_concurrency`), else `download_concurrency`. Pools, threads and queues are
        sized for it."""
        return self.max_concurrency if self.auto_concurrency else self.download_concurrency

    @property
    def shortest_connect_timeout(self) -> float | None:
        """The shorter of `connect_timeout` and `sock_connect_timeout` (None when neither is set): the
        one limit for engines whose client has a single connect timeout (urllib3, httpx, libcurl)."""
        return min((t for t in (self.connect_timeout, self.sock_connect_timeout) if t is not None), default=None)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> DownloaderSettings:
        """Build from a dict (a Remote's fields, a TOML table), ignoring None and unknown keys' absence.

        An unknown key is an error: a misspelt setting must not be silently dropped.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown downloader setting(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        given = {k: v for k, v in values.items() if v is not None}
        if given.get("download_concurrency") == AUTO:
            given = {**given, **concurrency_settings(given.pop("download_concurrency"))}
        for tls_field in ("ca_cert", "client_cert", "client_key"):
            if tls_field in given and not is_pem(given[tls_field]):
                given[tls_field] = Path(given[tls_field])
        return cls(**given)


@dataclass(frozen=True)
class RemoteSetting:
    """One setting a Remote carries: its name, the type of its value (int, float, bool, str, Path or
    dict for headers), its help text, whether its value is a secret, the rule its value must pass, the
    words taken instead of a value (`_remote`), and whether a command line has an option for it."""

    name: str
    kind: type
    help: str
    secret: bool
    rule: Rule | None
    words: tuple[str, ...] = ()
    option: bool = True

    @property
    def flag(self) -> str:
        """Its option on `pulp-sync sync`'s command line (`--sock-read-timeout`), whose secrets add
        `-env` or `-file`: one spelling for the command line that defines the options and the harness
        that writes them."""
        return "--" + self.name.replace("_", "-")

    def coerce(self, value: Any) -> Any:
        """`value` as this setting's type, passing its rule: text (a command line's, an environment
        variable's) is parsed, other values are checked; one of its `words` is itself; raises ValueError
        naming the setting."""
        if value in self.words:
            return value
        try:
            typed = _PARSERS[self.kind](value) if isinstance(value, str) else _checked(self.kind, value)
        except (TypeError, ValueError) as error:
            instead = f" (or {' or '.join(self.words)})" if self.words else ""
            raise ValueError(f"{self.name}: {error}{instead}") from error
        self.check(typed)
        return typed

    def check(self, value: Any) -> None:
        """Raise SettingError, naming this setting, if `value` (of its type, not None) breaks its rule."""
        if self.rule is not None:
            self.rule(self.name, value)


def _kind_of(hint: Any) -> type:
    """int, float, bool, str, Path or dict from a field's annotation (`float | None` -> float), the first
    of several (`Path | str | None` -> Path: a command line or a TOML table names a certificate's file)."""
    arguments = [argument for argument in typing.get_args(hint) if argument is not type(None)]
    if type(None) in typing.get_args(hint):
        hint = arguments[0]
    origin = typing.get_origin(hint) or hint
    return dict if isinstance(origin, type) and issubclass(origin, collections.abc.Mapping) else origin


def _parse_bool(text: str) -> bool:
    words = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}
    if text.strip().lower() not in words:
        raise ValueError(f"{text!r} is not true or false")
    return words[text.strip().lower()]


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number") from None


def _parse_float(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{text!r} is not a finite number")
    return number


def _parse_headers(text: str) -> dict[str, str]:
    """A JSON object of header names and values, or one `Name: value`."""
    if text.lstrip().startswith("{"):
        headers: dict[str, str] = _checked(dict, json.loads(text))  # names and values: the setting's rule
        return headers
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise ValueError(f"{text!r} is neither `Name: value` nor a JSON object")
    return {name.strip(): value.strip()}


def _checked(kind: type[Any], value: Any) -> Any:
    """`value` if it is of `kind` (an int is a float too; a bool is no int); a dict's keys and values strings."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is Path and isinstance(value, Path):
        return value
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{value!r} is not {'an' if kind is int else 'a'} {kind.__name__}")
    if kind is float and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number")
    return dict(value) if kind is dict else value


_PARSERS: dict[type, typing.Callable[[str], Any]] = {
    int: _parse_int, float: _parse_float, bool: _parse_bool, str: str, Path: Path, dict: _parse_headers,
}

_HINTS = typing.get_type_hints(DownloaderSettings)
REMOTE_SETTINGS: tuple[RemoteSetting, ...] = tuple(
    RemoteSetting(f.name, _kind_of(_HINTS[f.name]), f.metadata["help"], f.metadata["secret"], f.metadata["rule"],
                  f.metadata["words"], f.metadata["option"])
    for f in fields(DownloaderSettings)
    if f.metadata.get("remote")
)
"""Every setting of a Remote, in DownloaderSettings' order."""


def remote_setting(name: str) -> RemoteSetting:
    """The Remote setting called `name`; ValueError naming the nearest one (a typo) or listing the known ones
    when there is none."""
    for setting in REMOTE_SETTINGS:
        if setting.name == name:
            return setting
    names = [setting.name for setting in REMOTE_SETTINGS]
    near = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {near[0]}?" if near else f"known: {', '.join(names)}"
    raise ValueError(f"no remote setting named {name!r}; {hint}")


def parse_setting(assignment: str) -> tuple[str, Any]:
    """`KEY=VALUE` (a command line's `--remote-setting`) as the setting's name and typed value."""
    name, equals, text = assignment.partition("=")
    if not equals:
        raise ValueError(f"{assignment!r}: expected KEY=VALUE, e.g. rate_limit=20")
    setting = remote_setting(name.strip())
    return setting.name, setting.coerce(text)
