"""DownloaderSettings: the knobs every downloader honours, named after pulpcore's Remote fields.

`REMOTE_SETTINGS` is the one list of the settings a Remote carries (every field but the address
policy, the engine's internal chunk size and backoff, and the derived deadline's `min_rate` and
`deadline_allowance`, which have defaults and no column in pulp-sync's database): the `pulp-sync
sync` options, the harness's `[remote]` tables and `--remote-setting` are generated from it, so a
new field cannot be forgotten by any of them.
"""

from __future__ import annotations

import collections.abc
import json
import math
import re
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from downloaders import defaults
from downloaders.addresses import AddressPolicy

__all__ = ["DownloaderSettings", "RemoteSetting", "REMOTE_SETTINGS", "remote_setting", "parse_setting", "is_pem"]


_PEM_BEGIN = re.compile(r"^\s*-----BEGIN ", re.MULTILINE)


def is_pem(value: object) -> bool:
    """Whether a `ca_cert`, `client_cert` or `client_key` value is PEM text rather than a file's path.

    Pulp stores certificates and keys as text; the command line and older plugins give files. PEM
    text has a line starting `-----BEGIN `, which no sensible path has; lines before it are allowed, as
    OpenSSL allows them (`openssl pkcs12` writes "Bag Attributes" there), so that text the command
    line and the API accept is read as text here too.
    """
    return isinstance(value, str) and _PEM_BEGIN.search(value) is not None


def _check_timeout(name: str, value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds or None, not {value!r}")
    if value is not None and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of seconds, or None for no limit, not {value!r}")


def _remote(help: str, secret: bool = False) -> dict[str, Any]:
    """A field's metadata marking it a Remote setting: its help text, and whether its value is a secret
    (never taken on a command line, never written to a results folder)."""
    return {"remote": True, "help": help, "secret": secret}


@dataclass(frozen=True)
class DownloaderSettings:
    """Settings of one remote's downloads; checked when built, so a bad value fails before any fetch."""

    download_concurrency: int = field(default=defaults.DOWNLOAD_CONCURRENCY,
                                      metadata=_remote("Downloads in flight at once."))
    connect_timeout: float | None = field(default=defaults.CONNECT_TIMEOUT, metadata=_remote(
        "Seconds to get a connection, waiting for a free one in the pool included."))
    sock_connect_timeout: float | None = field(default=defaults.SOCK_CONNECT_TIMEOUT, metadata=_remote(
        "Seconds for the TCP (and TLS) connect of a new connection."))
    sock_read_timeout: float | None = field(default=defaults.SOCK_READ_TIMEOUT, metadata=_remote(
        "Seconds a read may wait for the next bytes."))
    total_timeout: float | None = field(default=defaults.TOTAL_TIMEOUT, metadata=_remote(
        "Seconds one download attempt may take in all, body included."))
    max_retries: int = field(default=defaults.MAX_RETRIES, metadata=_remote(
        "Retries after the first attempt (connection errors, timeouts, 429, 5xx)."))
    rate_limit: float | None = field(default=None, metadata=_remote("At most this many requests started per second."))
    headers: Mapping[str, str] = field(default_factory=dict, metadata=_remote("Extra request headers."))
    username: str | None = field(default=None, metadata=_remote("User name for HTTP basic auth."))
    password: str | None = field(default=None, repr=False, metadata=_remote("Password for HTTP basic auth.", True))
    proxy_url: str | None = field(default=None, metadata=_remote("HTTP proxy to download through."))
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
        if self.download_concurrency < 1:
            raise ValueError(f"download_concurrency must be at least 1, not {self.download_concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, not {self.max_retries}")
        if self.rate_limit is not None and not (self.rate_limit > 0 and math.isfinite(self.rate_limit)):
            raise ValueError(f"rate_limit is requests per second, positive and finite, not {self.rate_limit}")
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
        for name in ("connect_timeout", "sock_connect_timeout", "sock_read_timeout", "total_timeout"):
            _check_timeout(name, getattr(self, name))

    @property
    def shortest_connect_timeout(self) -> float | None:
        """The shorter of `connect_timeout` and `sock_connect_timeout` (None when neither is set): the
        one limit for engines whose client has a single connect timeout (urllib3, httpx, libcurl)."""
        return min((t for t in (self.connect_timeout, self.sock_connect_timeout) if t is not None), default=None)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "DownloaderSettings":
        """Build from a dict (a Remote's fields, a TOML table), ignoring None and unknown keys' absence.

        An unknown key is an error: a misspelt setting must not be silently dropped.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown downloader setting(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        given = {k: v for k, v in values.items() if v is not None}
        for tls_field in ("ca_cert", "client_cert", "client_key"):
            if tls_field in given and not is_pem(given[tls_field]):
                given[tls_field] = Path(given[tls_field])
        return cls(**given)


@dataclass(frozen=True)
class RemoteSetting:
    """One setting a Remote carries: its name, the type of its value (int, float, bool, str, Path or
    dict for headers), its help text, and whether its value is a secret."""

    name: str
    kind: type
    help: str
    secret: bool

    @property
    def flag(self) -> str:
        """Its option on `pulp-sync sync`'s command line (`--sock-read-timeout`), whose secrets add
        `-env` or `-file`: one spelling for the command line that defines the options and the harness
        that writes them."""
        return "--" + self.name.replace("_", "-")

    def coerce(self, value: Any) -> Any:
        """`value` as this setting's type: text (a command line's, an environment variable's) is parsed,
        other values are checked; raises ValueError naming the setting."""
        try:
            return _PARSERS[self.kind](value) if isinstance(value, str) else _checked(self.kind, value)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{self.name}: {error}") from error


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


def _parse_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text!r} is not a finite number")
    return number


def _parse_headers(text: str) -> dict[str, str]:
    """A JSON object of header names and values, or one `Name: value`."""
    if text.lstrip().startswith("{"):
        return _checked(dict, json.loads(text))
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise ValueError(f"{text!r} is neither `Name: value` nor a JSON object")
    return {name.strip(): value.strip()}


def _checked(kind: type, value: Any) -> Any:
    """`value` if it is of `kind` (an int is a float too; a bool is no int); a dict's keys and values strings."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is Path and isinstance(value, Path):
        return value
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{value!r} is not {'an' if kind is int else 'a'} {kind.__name__}")
    if kind is float and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number")
    if kind is dict and not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise TypeError("header names and values must be strings")
    return dict(value) if kind is dict else value


_PARSERS: dict[type, typing.Callable[[str], Any]] = {
    int: int, float: _parse_float, bool: _parse_bool, str: str, Path: Path, dict: _parse_headers,
}

_HINTS = typing.get_type_hints(DownloaderSettings)
REMOTE_SETTINGS: tuple[RemoteSetting, ...] = tuple(
    RemoteSetting(f.name, _kind_of(_HINTS[f.name]), f.metadata["help"], f.metadata["secret"])
    for f in fields(DownloaderSettings)
    if f.metadata.get("remote")
)
"""Every setting of a Remote, in DownloaderSettings' order."""


def remote_setting(name: str) -> RemoteSetting:
    """The Remote setting called `name`; ValueError listing the known ones when there is none."""
    for setting in REMOTE_SETTINGS:
        if setting.name == name:
            return setting
    raise ValueError(f"no remote setting named {name!r}; known: {', '.join(s.name for s in REMOTE_SETTINGS)}")


def parse_setting(assignment: str) -> tuple[str, Any]:
    """`KEY=VALUE` (a command line's `--remote-setting`) as the setting's name and typed value."""
    name, equals, text = assignment.partition("=")
    if not equals:
        raise ValueError(f"{assignment!r}: expected KEY=VALUE, e.g. rate_limit=20")
    setting = remote_setting(name.strip())
    return setting.name, setting.coerce(text)
