"""Request headers shared by every engine, so servers see the same requests from each."""

from __future__ import annotations

import base64

from downloaders.settings import DownloaderSettings

__all__ = ["request_headers", "first_hop_headers", "proxy_headers", "basic_credentials"]


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
        headers["Authorization"] = basic_credentials(settings.username, settings.password)
    return headers


def proxy_headers(settings: DownloaderSettings) -> dict[str, str]:
    """The headers for the proxy alone (the CONNECT of an https request, or each plain http request it
    forwards): its basic auth when the settings name a proxy user, else none."""
    if not settings.proxy_username:
        return {}
    return {"Proxy-Authorization": basic_credentials(settings.proxy_username, settings.proxy_password)}


def basic_credentials(username: str, password: str | None) -> str:
    """HTTP basic auth's header value (RFC 7617, the credentials in UTF-8), made here for the remote and
    the proxy alike rather than by each client library, whose encodings differ (urllib3's is Latin-1)."""
    credentials = f"{username}:{password or ''}".encode()
    return "Basic " + base64.b64encode(credentials).decode("ascii")
