"""DownloaderSettings: the knobs every downloader honours, named after pulpcore's Remote fields."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from downloaders import defaults

__all__ = ["DownloaderSettings"]


def _check_timeout(name: str, value: float | None) -> None:
    if value is not None and value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds or None, not {value!r}")


@dataclass(frozen=True)
class DownloaderSettings:
    """Settings of one remote's downloads; checked when built, so a bad value fails before any fetch."""

    download_concurrency: int = defaults.DOWNLOAD_CONCURRENCY
    connect_timeout: float | None = defaults.CONNECT_TIMEOUT
    sock_connect_timeout: float | None = defaults.SOCK_CONNECT_TIMEOUT
    sock_read_timeout: float | None = defaults.SOCK_READ_TIMEOUT
    total_timeout: float | None = defaults.TOTAL_TIMEOUT
    max_retries: int = defaults.MAX_RETRIES
    rate_limit: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    proxy_url: str | None = None
    proxy_username: str | None = None
    proxy_password: str | None = field(default=None, repr=False)
    tls_validation: bool = True
    ca_cert: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = field(default=None, repr=False)
    chunk_size: int = defaults.CHUNK_SIZE
    backoff_base: float = defaults.BACKOFF_BASE
    backoff_max: float = defaults.BACKOFF_MAX

    def __post_init__(self) -> None:
        if self.download_concurrency < 1:
            raise ValueError(f"download_concurrency must be at least 1, not {self.download_concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, not {self.max_retries}")
        if self.rate_limit is not None and self.rate_limit <= 0:
            raise ValueError(f"rate_limit is requests per second and must be positive, not {self.rate_limit}")
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
        for path_field in ("ca_cert", "client_cert", "client_key"):
            if path_field in given:
                given[path_field] = Path(given[path_field])
        return cls(**given)
