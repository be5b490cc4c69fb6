"""The built-in engines follow redirects themselves (downloaders.redirects): a bounded number of hops, each
checked as the first URL is, and the remote's credentials and configured headers kept to its origin.

Two servers on 127.0.0.1 on two ports are two origins. Nothing leaves 127.0.0.1 (`only_loopback`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from downloaders import (
    AddressRefused,
    DownloadError,
    DownloaderSettings,
    DownloadResult,
    HttpStatusError,
    Redirects,
    UnsupportedURL,
    defaults,
)
from downloaders.redirects import REDIRECT_STATUSES
from tests.downloaders.conftest import Recorder, failure_of, fetch_one

pytestmark = pytest.mark.usefixtures("only_loopback")

PRIVATE = {"username": "user", "password": "the-password", "headers": {"X-Token": "the-token", "Cookie": "id=1"}}
"""Settings whose every header must stay with the remote's origin."""


@pytest.fixture
def servers(serve: Callable[..., str]) -> tuple[Recorder, str, Recorder, str]:
    """Two origins: A and B, their base URLs (on "localhost": an HTTP client keeps no cookie of an address)."""
    a, b = Recorder(), Recorder()
    return a, serve(a).replace("127.0.0.1", "localhost"), b, serve(b).replace("127.0.0.1", "localhost")


def carries_private_headers(headers: object) -> list[bool]:
    return [name in headers for name in ("Authorization", "X-Token", "Cookie")]  # type: ignore[operator]


def test_a_redirect_to_another_origin_carries_no_credentials_nor_configured_headers(
    engine: str, servers: tuple[Recorder, str, Recorder, str], tmp_path: Path
) -> None:
    a, a_url, b, b_url = servers
    a.answers["/start"] = lambda: _redirect_setting_a_cookie(b_url + "file")
    b.body("/file", b"from B\n")
    outcome = fetch_one(engine, a_url + "start", tmp_path, **PRIVATE)
    assert isinstance(outcome, DownloadResult) and outcome.path.read_bytes() == b"from B\n"
    [at_a], [at_b] = a.headers("/start"), b.headers("/file")
    assert carries_private_headers(at_a) == [True, True, True]
    assert carries_private_headers(at_b) == [False, False, False], dict(at_b)
    assert at_b["User-Agent"] == f"pulp-sync ({engine})" and at_b["Accept-Encoding"] == "identity"


def test_once_dropped_they_are_not_sent_again_back_at_the_first_origin(
    engine: str, servers: tuple[Recorder, str, Recorder, str], tmp_path: Path
) -> None:
    a, a_url, b, b_url = servers
    a.redirect("/start", b_url + "bounce")
    b.redirect("/bounce", a_url + "file")
    a.body("/file")
    assert isinstance(fetch_one(engine, a_url + "start", tmp_path, **PRIVATE), DownloadResult)
    assert carries_private_headers(a.headers("/file")[0]) == [False, False, False]


@pytest.mark.parametrize("status", sorted(REDIRECT_STATUSES))
@pytest.mark.parametrize("location", ["/dir/file", "file", "{base}dir/file"])
def test_a_redirect_within_the_origin_keeps_them(
    engine: str, servers: tuple[Recorder, str, Recorder, str], tmp_path: Path, status: int, location: str
) -> None:
    """Every redirect status is followed (with a GET); a relative Location is resolved against the current URL."""
    a, a_url, _, _ = servers
    a.redirect("/dir/start", location.format(base=a_url), status)
    a.body("/dir/file")
    assert isinstance(fetch_one(engine, a_url + "dir/start", tmp_path, **PRIVATE), DownloadResult)
    assert carries_private_headers(a.headers("/dir/file")[0]) == [True, True, True]


def test_as_many_redirects_as_allowed_are_followed_and_one_more_fails(
    engine: str, servers: tuple[Recorder, str, Recorder, str], tmp_path: Path
) -> None:
    a, a_url, _, _ = servers
    for hop in range(defaults.MAX_REDIRECTS + 1):
        a.redirect(f"/hop/{hop + 1}", f"/hop/{hop}")
    a.body("/hop/0")
    assert isinstance(fetch_one(engine, a_url + f"hop/{defaults.MAX_REDIRECTS}", tmp_path), DownloadResult)
    a.requests.clear()
    error = failure_of(fetch_one(engine, a_url + f"hop/{defaults.MAX_REDIRECTS + 1}", tmp_path, max_retries=2)).error
    assert type(error) is DownloadError and error.message.startswith("too many redirects")
    assert len(a.requests) == defaults.MAX_REDIRECTS + 1, "the first request and MAX_REDIRECTS hops, no more"


@pytest.mark.parametrize(
    ("location", "error_type", "shown"),
    [
        ("http://169.254.169.254/latest/meta-data/", AddressRefused, "169.254.169.254 is denied"),
        ("http://metadata.test/latest/meta-data/", AddressRefused, "metadata.test (169.254.169.254) is denied"),
        ("ftp://127.0.0.1/file", UnsupportedURL, "only http and https URLs are fetched"),
        ("http://[oops/", UnsupportedURL, "not a URL we can fetch"),
    ],
)
def test_a_redirect_where_the_first_url_could_not_go_is_refused(
    engine: str,
    servers: tuple[Recorder, str, Recorder, str],
    tmp_path: Path,
    only_loopback: list[str],
    location: str,
    error_type: type[DownloadError],
    shown: str,
) -> None:
    a, a_url, _, _ = servers
    a.redirect("/start", location)
    error = failure_of(fetch_one(engine, a_url + "start", tmp_path, max_retries=2)).error
    assert type(error) is error_type and shown in error.message, error
    assert error.url == a_url + "start"
    assert only_loopback == [] and list(tmp_path.iterdir()) == []


def test_a_redirect_without_location_is_the_answer(
    engine: str, servers: tuple[Recorder, str, Recorder, str], tmp_path: Path
) -> None:
    a, a_url, _, _ = servers
    error = failure_of(fetch_one(engine, a_url + "nowhere", tmp_path, headers={})).error
    assert isinstance(error, HttpStatusError) and error.status == 404
    a.answers["/lost"] = lambda: web.Response(status=302)
    error = failure_of(fetch_one(engine, a_url + "lost", tmp_path)).error
    assert isinstance(error, HttpStatusError) and error.status == 302


def test_proxy_authorization_stays_with_the_proxy_across_origins(
    engine: str, serve: Callable[..., str], tmp_path: Path
) -> None:
    """The proxy answers for both origins itself; it sees its own credentials on every hop."""
    proxy = Recorder()
    proxy.redirect("/start", "http://localhost:9/file")
    proxy.body("/file")
    settings = {**PRIVATE, "proxy_url": serve(proxy), "proxy_username": "proxy-user", "proxy_password": "proxy-pass"}
    assert isinstance(fetch_one(engine, "http://127.0.0.1:9/start", tmp_path, **settings), DownloadResult)
    [first], [second] = proxy.headers("/start"), proxy.headers("/file")
    assert "Proxy-Authorization" in first and "Proxy-Authorization" in second
    assert carries_private_headers(first) == [True, True, True]
    assert carries_private_headers(second) == [False, False, False]


# --- Redirects alone -------------------------------------------------------------------------------------


def test_an_origin_is_scheme_host_and_port_with_the_default_port_filled_in() -> None:
    settings = DownloaderSettings(headers={"x-token": "t"})
    headers = {"Authorization": "Basic x", "X-TOKEN": "t", "User-Agent": "u"}
    chain = Redirects("http://Mirror.example/a", headers, settings)
    chain.follow("http://mirror.example:80/b")
    chain.follow("//MIRROR.EXAMPLE/c")
    assert (chain.url, chain.hops, chain.headers) == ("http://MIRROR.EXAMPLE/c", 2, headers)
    chain.follow("https://mirror.example/d")
    assert chain.headers == {"User-Agent": "u"}


def test_the_first_url_is_checked_too() -> None:
    with pytest.raises(AddressRefused):
        Redirects("http://169.254.169.254/", {}, DownloaderSettings())
    with pytest.raises(UnsupportedURL):
        Redirects("file:///etc/passwd", {}, DownloaderSettings())


def _redirect_setting_a_cookie(location: str) -> web.Response:
    """A's redirect to B also sets a cookie, which B must not get."""
    response = web.Response(status=302, headers={"Location": location})
    response.set_cookie("session", "from-a")
    return response
