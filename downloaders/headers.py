"""Request headers shared by every engine, so servers see the same requests from each."""

from __future__ import annotations

from downloaders.settings import DownloaderSettings

__all__ = ["request_headers"]


def request_headers(settings: DownloaderSettings, engine: str) -> dict[str, str]:
    """Identity encoding (we verify the bytes the manifest names, not a re-encoding), then the user's headers."""
    headers = {"Accept-Encoding": "identity", "User-Agent": f"pulp-sync ({engine})"}
    headers.update(settings.headers)
    return headers
