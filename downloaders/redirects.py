"""Redirects followed by the engine, hop by hop, each hop checked as the first URL is.

An HTTP library that follows redirects itself decides alone where the next request goes and what it
carries. A sync service fetches URLs its users give, and a redirect is a URL the *server* gives: it
must pass the same checks as the first one (http or https only; the remote-address policy, since a
redirect to 169.254.169.254 is the classic way around a check of the first URL only), and the
remote's credentials must not follow it to another origin (a mirror, or an attacker's server).
Libraries disagree on what they drop on such a hop (aiohttp drops Authorization but re-applies a
session's auth and keeps every other header; urllib3 drops a fixed list), so the engines turn
their library's redirects off and follow them here.

On a hop to another origin (scheme, host or port differs) `Authorization`, `Cookie` and every header
the settings configure (they may carry tokens) are dropped, for that hop and every later one: once
dropped they are not sent again, even when a later hop comes back to the first origin. Whatever
belongs to a proxy (Proxy-Authorization) is the engine's and stays. A plugin uses it so:

    chain = Redirects(request.url, headers, settings)    # refuses a URL it must not fetch
    while True:
        response = get(chain.url, headers=chain.headers, follow_redirects=False)
        location = redirect_location(response.status, response.headers.get("Location"))
        if location is None:
            break                                       # the answer to handle (2xx, or an error)
        response.close()
        chain.follow(location)                          # refuses a hop it must not follow
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urljoin, urlsplit

from downloaders import defaults
from downloaders.base import check_url
from downloaders.errors import AddressRefused, DownloadError, UnsupportedURL
from downloaders.settings import DownloaderSettings

__all__ = ["Redirects", "redirect_location", "origin", "REDIRECT_STATUSES"]

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
"""Statuses followed, each with a GET (downloads are GETs, so 307 and 308 change nothing)."""

_ALWAYS_PRIVATE = frozenset({"authorization", "cookie"})
_DEFAULT_PORTS = {"http": 80, "https": 443}

_Origin = tuple[str, str, int | None]


def redirect_location(status: int, location: str | None) -> str | None:
    """The Location of a response to follow, or None when the response is the answer (a redirect
    without a Location is an answer like any other)."""
    return location if status in REDIRECT_STATUSES else None


class Redirects:
    """Where one request's next hop goes, and with which headers; errors name the request's URL.

    `headers` are the first hop's (the common ones, the configured ones, basic auth); `settings`
    gives the address policy and the configured headers' names.
    """

    def __init__(
        self, url: str, headers: Mapping[str, str], settings: DownloaderSettings, limit: int = defaults.MAX_REDIRECTS
    ) -> None:
        check_url(url)
        settings.address_policy.check_url(url)
        self.first = url
        self.url = url
        self.headers = dict(headers)
        self.hops = 0
        self._origin = origin(url)
        self._private = _ALWAYS_PRIVATE | {name.lower() for name in settings.headers}
        self._policy = settings.address_policy
        self._limit = limit

    def follow(self, location: str) -> None:
        """Make the redirect to `location` (relative to the current URL) the next hop.

        Raises DownloadError past `limit` hops, UnsupportedURL for a target that is not http(s),
        AddressRefused for one the policy refuses by its name or literal address (its resolved
        addresses are the engine's to check when it connects).
        """
        if self.hops >= self._limit:
            raise DownloadError(self.first, f"too many redirects: more than {self._limit}")
        try:
            target = urljoin(self.url, location)
        except ValueError as error:
            raise UnsupportedURL(self.first, f"redirected to {location}: not a URL we can fetch: {error}") from error
        try:
            check_url(target)
            self._policy.check_url(target)
        except (UnsupportedURL, AddressRefused) as error:
            raise type(error)(self.first, f"redirected to {target}: {error.message}") from error
        self.hops += 1
        self.url = target
        if origin(target) != self._origin:
            self.headers = {name: value for name, value in self.headers.items() if name.lower() not in self._private}


def origin(url: str) -> _Origin:
    """Scheme, host and port (the scheme's default when none is given): where a request with credentials
    goes, and so what credentials stay with (a redirect here, a remote's new URL in pulp-sync). A port
    out of range is None: nothing listens there."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)
