"""The rules of a Remote setting's value (downloaders/settings.py): a value no engine can use is a
SettingError naming the setting, when the settings are made and when a value is coerced (a command
line's, a spec's); the bound on waits, `defaults.MAX_SECONDS`, is one every built-in engine can use."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import downloaders
from conformance.checks import Subject
from downloaders import DownloaderSettings, DownloadRequest, DownloadResult, UnsupportedURL, check_url, defaults
from downloaders.errors import SettingError
from downloaders.settings import parse_setting, remote_setting
from tests.servers import serve_app

TIMEOUTS = ("connect_timeout", "sock_connect_timeout", "sock_read_timeout", "total_timeout")

REFUSED: list[tuple[dict[str, Any], str]] = [
    *(({name: 1e308}, f"{name} must be a positive number of seconds, at most 2147483 ") for name in TIMEOUTS),
    ({"sock_read_timeout": defaults.MAX_SECONDS + 1}, "sock_read_timeout must be a positive number of seconds"),
    ({"total_timeout": float("nan")}, "total_timeout must be a positive number of seconds"),
    ({"connect_timeout": 0.0}, "connect_timeout must be a positive number of seconds"),
    ({"download_concurrency": 0}, "download_concurrency must be from 1 to 256, not 0"),
    ({"download_concurrency": 2_000_000_000}, "download_concurrency must be from 1 to 256, not 2000000000"),
    ({"rate_limit": 1e-308}, "rate_limit is requests per second, finite and at least 1/2147483"),
    ({"rate_limit": float("inf")}, "rate_limit is requests per second, finite"),
    ({"headers": {"X-Trace": "a\r\nX-Injected: 1"}}, "headers: the value of X-Trace holds CR, LF or NUL"),
    ({"headers": {"X-Trace": "a\nb"}}, "headers: the value of X-Trace holds CR, LF or NUL"),
    ({"headers": {"X-Trace": "a\x00b"}}, "headers: the value of X-Trace holds CR, LF or NUL"),
    ({"headers": {"X-Trace": "a\x01b"}}, "headers: the value of X-Trace holds a character other than visible ASCII"),
    ({"headers": {"X-Trace": "€"}}, "headers: the value of X-Trace holds a character other than visible ASCII"),
    ({"headers": {"X Trace": "v"}}, "headers: 'X Trace' is not a header name"),
    ({"headers": {"X-Trace\r\nX-Injected": "v"}}, r"headers: 'X-Trace\\r\\nX-Injected' is not a header name"),
    ({"headers": {"": "v"}}, "headers: '' is not a header name"),
    ({"headers": {"X-Trace": 1}}, "headers: names and values are strings"),
    ({"proxy_url": "ftp://127.0.0.1:21"}, "proxy_url: only http and https URLs are fetched, not 'ftp'"),
    ({"proxy_url": "socks5://127.0.0.1:1080"}, "proxy_url: only http and https URLs are fetched, not 'socks5'"),
    ({"proxy_url": "proxy.example:3128"}, "proxy_url: only http and https URLs are fetched, not 'proxy.example'"),
    ({"proxy_url": "http://proxy.example:99999"}, "proxy_url: not a URL we can fetch: Port out of range"),
]


@pytest.mark.parametrize(("values", "message"), REFUSED, ids=repr)
def test_a_value_no_engine_can_use_is_refused_naming_the_setting(values: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        DownloaderSettings.from_mapping(values)
    [(name, value)] = values.items()
    with pytest.raises(ValueError, match=f"^{name}"):
        remote_setting(name).coerce(value)


def test_a_header_value_is_never_quoted_in_the_refusal() -> None:
    with pytest.raises(SettingError) as refused:
        DownloaderSettings(headers={"Authorization": "Bearer s3cret\r\n"})
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    "assignment",
    ["sock_read_timeout=1e308", "rate_limit=1e-308", "proxy_url=ftp://127.0.0.1:21", 'headers={"X-A": "a\\r\\nb"}'],
)
def test_text_is_checked_as_values_are(assignment: str) -> None:
    """The harness's --remote-setting and the command line's options parse text, then apply the same rules."""
    with pytest.raises(SettingError, match="^" + assignment.split("=")[0]):
        parse_setting(assignment)


def test_the_edges_of_the_rules_are_allowed() -> None:
    settings = DownloaderSettings(
        connect_timeout=defaults.MAX_SECONDS,
        sock_connect_timeout=defaults.MAX_SECONDS,
        sock_read_timeout=defaults.MAX_SECONDS,
        total_timeout=defaults.MAX_SECONDS,
        rate_limit=1 / defaults.MAX_SECONDS,
        headers={"Authorization": "Bearer a.b-c_d~e+f/g=", "X-Empty": "", "X-Tab": "a\tb", "x-~!#$%&'*+.^_`|": "v"},
        proxy_url="https://proxy.example:3128",
    )
    assert settings.total_timeout == defaults.MAX_SECONDS
    assert DownloaderSettings(proxy_url="HTTP://proxy.example").proxy_url == "HTTP://proxy.example"


def test_the_bound_fits_the_waits_of_poll_and_epoll() -> None:
    """2**31 - 1 milliseconds: the longest wait poll() and epoll take (select raises OverflowError past it)."""
    assert defaults.MAX_SECONDS * 1000 <= 2**31 - 1 < (defaults.MAX_SECONDS + 1) * 1000


def test_a_request_url_is_checked_by_the_same_rule() -> None:
    for url in ("ftp://127.0.0.1/PULP_MANIFEST", "file:///etc/passwd", "http://[oops/"):
        with pytest.raises(UnsupportedURL):
            check_url(url)
    check_url("https://mirror.example/PULP_MANIFEST")


BODY = b"fetched with every wait at its longest\n"


@pytest.mark.parametrize("engine", sorted(downloaders.available()))
def test_every_engine_fetches_with_every_wait_at_the_bound(engine: str, tmp_path: Path) -> None:
    """Every timeout at MAX_SECONDS, and rate_limit at its least (the gap between two starts at
    MAX_SECONDS would never pass: the first start is not delayed, so one request is fetched). The
    futures engine raised OverflowError for a sock_read_timeout of 1e308."""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=BODY)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    longest = dict.fromkeys(TIMEOUTS, defaults.MAX_SECONDS)
    with serve_app(app) as url:
        request = DownloadRequest(url + "f.bin", "f.bin", hashlib.sha256(BODY).hexdigest(), len(BODY))
        subject = Subject(engine, downloaders.load(engine))
        [outcome] = subject.fetch_all([request], tmp_path, rate_limit=1 / defaults.MAX_SECONDS, **longest)
    assert isinstance(outcome, DownloadResult), outcome
