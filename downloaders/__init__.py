"""Downloaders: requests in, verified files out. Imports nothing from Django or pulp_sync.

A plugin author can read this package alone. What this module exports is the plugin-facing API,
kept stable for plugins (docs/plugins.md):

- the contract: `Downloader`, `DownloadRequest`, `DownloadResult`, `DownloadFailure`, `Outcome`,
  `DownloaderSettings` (with its `AddressPolicy`), the error types, and the entry-point group `ENTRY_POINT_GROUP`;
- the helpers that make a downloader behave like the built-ins, so that a comparison measures the
  engine and nothing else: `BaseDownloader` with `Handoff` and `FetchCancelled` (a thread of its
  own and the bounded hand-off to the consumer), `ConcurrencyLimit` from `limit_for` (the downloads in
  flight now, fixed or found while the fetch runs: `AdaptiveConcurrency`, `is_overload`), `BodyWriter`
  (stream to a temp file, verify size and sha256, never leave a partial file), `RetryPolicy` with
  `DownloadJob` (a request's attempts so far, and the outcome to report), `RateLimiter`,
  `parse_retry_after`, `request_headers` and `first_hop_headers` (basic auth as a header of the
  first hop),
  `build_ssl_context` (certificates and keys given as files or as PEM text, `is_pem`), `check_url`,
  `Redirects` with `redirect_location` (redirects followed hop by hop: each checked against the
  address policy, credentials and configured headers kept to the remote's origin), and
  `deadline_seconds` with `deadline_timeout` (how long an attempt may take, and the error once it
  took longer).

Everything else (the engines' modules, `defaults`) is internal and may change.
"""

from downloaders.addresses import AddressPolicy
from downloaders.base import BaseDownloader, Downloader, FetchCancelled, Handoff, adapts, check_url
from downloaders.concurrency import AdaptiveConcurrency, ConcurrencyLimit, FixedConcurrency, is_overload, limit_for
from downloaders.deadlines import deadline_seconds, deadline_timeout
from downloaders.errors import (
    AddressRefused,
    BodyTooLarge,
    DigestMismatch,
    DownloadConnectionError,
    DownloadError,
    DownloadTimeout,
    HttpStatusError,
    LocalStorageError,
    SizeMismatch,
    TLSConfigurationError,
    TLSVerificationError,
    UnsupportedURL,
    VerificationError,
)
from downloaders.headers import first_hop_headers, request_headers
from downloaders.redirects import Redirects, origin, redirect_location
from downloaders.registry import ENTRY_POINT_GROUP, UnknownDownloader, available, load
from downloaders.retry import DownloadJob, RateLimiter, RetryPolicy, parse_retry_after
from downloaders.settings import DownloaderSettings, is_pem
from downloaders.streaming import BodyWriter
from downloaders.tls import build_ssl_context
from downloaders.types import DownloadFailure, DownloadRequest, DownloadResult, Outcome

__all__ = [
    "AddressPolicy",
    "AddressRefused",
    "BaseDownloader",
    "Downloader",
    "FetchCancelled",
    "Handoff",
    "check_url",
    "adapts",
    "AdaptiveConcurrency",
    "ConcurrencyLimit",
    "FixedConcurrency",
    "is_overload",
    "limit_for",
    "deadline_seconds",
    "deadline_timeout",
    "TLSConfigurationError",
    "BodyTooLarge",
    "DigestMismatch",
    "DownloadConnectionError",
    "DownloadError",
    "DownloadTimeout",
    "HttpStatusError",
    "LocalStorageError",
    "SizeMismatch",
    "TLSVerificationError",
    "UnsupportedURL",
    "VerificationError",
    "request_headers",
    "first_hop_headers",
    "Redirects",
    "origin",
    "redirect_location",
    "ENTRY_POINT_GROUP",
    "UnknownDownloader",
    "available",
    "load",
    "DownloadJob",
    "RateLimiter",
    "RetryPolicy",
    "parse_retry_after",
    "DownloaderSettings",
    "is_pem",
    "BodyWriter",
    "build_ssl_context",
    "DownloadFailure",
    "DownloadRequest",
    "DownloadResult",
    "Outcome",
]
