"""Request headers shared by every engine, so servers see the same requests from each."""

from __future__ import annotations

import base64

from downloaders.settings import DownloaderSettings

__all__ = ["request_headers", "first_hop_headers"]


def request_headers(settings: DownloaderSettings, engine: str) -> dict[str, str]:
    """Identity encoding (we verify the bytes the manifest names, not a re-encoding), then the user's headers."""
    headers = {"Accept-Encoding": "identity", "User-Agent": f"pulp-sync ({engine})"}
    headers.update(settings.headers)
    return headers


def first_hop_headers(settings: DownloaderSettings, engine: str) -> dict[str, str]:
    """A request's first hop's headers: `request_headers` and the remote's basic auth as an Authorization
    header, which `Redirects` drops with the configured headers on a hop to another origin. Not a client
    library's own auth (aiohttp's, httpx's, libcurl's USERPWD), which would send it wherever a redirect
    leads."""
    headers = request_headers(settings, engine)
    if settings.username:
        credentials = f"{settings.username}:{settings.password or ''}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(credentials).decode("ascii")
    return headers
