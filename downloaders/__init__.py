"""Downloaders: requests in, verified files out. Imports nothing from Django or pulp_sync.

A plugin author can read this package alone: `types` (requests and outcomes), `settings`,
`errors`, `base` (the `Downloader` contract and `BaseDownloader`), and the two built-in engines,
`asyncio_engine` and `futures_engine`.
"""

from downloaders.base import BaseDownloader, Downloader, Handoff, check_url
from downloaders.errors import (
    DigestMismatch,
    DownloadConnectionError,
    DownloadError,
    DownloadTimeout,
    HttpStatusError,
    SizeMismatch,
    TLSVerificationError,
    UnsupportedURL,
    VerificationError,
)
from downloaders.registry import ENTRY_POINT_GROUP, UnknownDownloader, available, load
from downloaders.settings import DownloaderSettings
from downloaders.types import DownloadFailure, DownloadRequest, DownloadResult, Outcome

__all__ = [
    "BaseDownloader",
    "Downloader",
    "Handoff",
    "check_url",
    "DigestMismatch",
    "DownloadConnectionError",
    "DownloadError",
    "DownloadTimeout",
    "HttpStatusError",
    "SizeMismatch",
    "TLSVerificationError",
    "UnsupportedURL",
    "VerificationError",
    "ENTRY_POINT_GROUP",
    "UnknownDownloader",
    "available",
    "load",
    "DownloaderSettings",
    "DownloadFailure",
    "DownloadRequest",
    "DownloadResult",
    "Outcome",
]
