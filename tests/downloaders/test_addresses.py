"""The built-in engines enforce the remote-address policy: on the URL's host before any connection, on
every address a name resolves to when connecting, and on a proxy and the targets it would reach.

Nothing leaves 127.0.0.1: `only_loopback` refuses (and records) any other connection, and resolves the
`.test` names of `FAKE_NAMES` to link-local addresses no connection is ever made to.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from downloaders import AddressPolicy, AddressRefused, DownloadConnectionError, DownloadResult, UnsupportedURL
from tests.downloaders.conftest import Recorder, failure_of, fetch_one

pytestmark = pytest.mark.usefixtures("only_loopback")

LOOPBACK_DENIED = AddressPolicy(deny=("127.0.0.0/8", "::1"))
"""Denies what "localhost" resolves to, which a URL on "localhost" does not spell."""


@pytest.fixture
def site(serve: Callable[..., str]) -> tuple[Recorder, str]:
    """A server answering /x; its base URL on "localhost" (a name: only the connection-time check sees 127.0.0.1)."""
    recorder = Recorder()
    recorder.body("/x")
    return recorder, serve(recorder).replace("127.0.0.1", "localhost")


def refusal(outcome: object) -> AddressRefused:
    error = failure_of(outcome).error  # type: ignore[arg-type]
    assert isinstance(error, AddressRefused), f"expected AddressRefused, got {error!r}"
    assert not error.retryable
    return error


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "https://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "http://[fe80::1]:8080/x",
    ],
)
def test_a_link_local_address_is_refused_before_any_connection(
    engine: str, url: str, tmp_path: Path, only_loopback: list[str]
) -> None:
    started = time.monotonic()
    error = refusal(fetch_one(engine, url, tmp_path, max_retries=3))
    assert time.monotonic() - started < 1
    assert "denied by the remote-address policy" in error.message and error.url == url
    assert only_loopback == [], "no connection may be attempted"
    assert list(tmp_path.iterdir()) == []


def test_a_name_resolving_to_a_denied_address_is_refused_when_connecting(
    engine: str, tmp_path: Path, only_loopback: list[str]
) -> None:
    url = "http://metadata.test/latest/meta-data/"
    error = refusal(fetch_one(engine, url, tmp_path))
    assert error.url == url
    assert "metadata.test (169.254.169.254) is denied by the remote-address policy" in error.message
    assert only_loopback == []


def test_the_tests_guard_stops_what_an_empty_policy_lets_through(
    engine: str, tmp_path: Path, only_loopback: list[str]
) -> None:
    """Without the policy the engine does try 169.254.169.254: the guard's empty list above means something."""
    outcome = fetch_one(engine, "http://metadata.test/x", tmp_path, address_policy=AddressPolicy(deny=()))
    assert isinstance(failure_of(outcome).error, DownloadConnectionError)
    assert only_loopback and set(only_loopback) == {"169.254.169.254"}


def test_localhost_is_refused_when_its_address_is_denied(
    engine: str, site: tuple[Recorder, str], tmp_path: Path
) -> None:
    recorder, base = site
    error = refusal(fetch_one(engine, base + "x", tmp_path, address_policy=LOOPBACK_DENIED))
    assert "localhost (127.0.0.1) is denied by the remote-address policy" in error.message, error
    assert recorder.requests == []
    assert isinstance(fetch_one(engine, base + "x", tmp_path), DownloadResult), "the default policy allows it"


def test_only_the_allowed_addresses_of_a_name_are_connected_to(
    engine: str, serve: Callable[..., str], tmp_path: Path, only_loopback: list[str]
) -> None:
    """mixed.test resolves to 169.254.169.254 first, then 127.0.0.1: only the second is tried."""
    recorder = Recorder()
    recorder.body("/x")
    port = serve(recorder).rstrip("/").rsplit(":", 1)[1]
    assert isinstance(fetch_one(engine, f"http://mixed.test:{port}/x", tmp_path), DownloadResult)
    assert only_loopback == []


@pytest.mark.parametrize(
    ("allow", "host", "allowed"),
    [
        (("192.0.2.0/24",), "localhost", False),
        (("192.0.2.0/24",), "127.0.0.1", False),
        (("localhost",), "localhost", True),
        (("localhost",), "127.0.0.1", False),
        (("127.0.0.0/8",), "localhost", True),
    ],
)
def test_an_allow_list_refuses_what_it_does_not_name(
    engine: str, site: tuple[Recorder, str], tmp_path: Path, allow: tuple[str, ...], host: str, allowed: bool
) -> None:
    recorder, base = site
    outcome = fetch_one(engine, base.replace("localhost", host) + "x", tmp_path, address_policy=AddressPolicy(allow))
    if allowed:
        assert isinstance(outcome, DownloadResult)
    else:
        assert "not in the remote-address policy's allow list" in refusal(outcome).message
        assert recorder.requests == []


# --- the policy's rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("169.254.169.254", None),
        ("[fe80::1]", None),
        ("::ffff:169.254.169.254", None),
        ("169.254.169.254.", None),
        ("metadata.internal", "169.254.169.254"),
        ("metadata.internal", "fe80::1%eth0"),
    ],
)
def test_the_default_policy_denies_link_local(host: str, address: str | None) -> None:
    assert "is denied by the remote-address policy" in (AddressPolicy().refusal(host, address) or "")


@pytest.mark.parametrize(
    ("host", "address"), [("mirror.example", None), ("mirror.example", "192.0.2.7"), ("::1", None)]
)
def test_the_default_policy_allows_the_rest(host: str, address: str | None) -> None:
    assert AddressPolicy().refusal(host, address) is None


def test_names_and_suffixes() -> None:
    policy = AddressPolicy(deny=(".internal.example", "admin.example"))
    assert policy.refusal("a.b.internal.example") and policy.refusal("ADMIN.example.")
    assert policy.refusal("internal.example") is None and policy.refusal("other.example") is None


def test_an_allow_list_of_networks_leaves_a_name_to_its_addresses() -> None:
    """Before DNS a name cannot be judged by networks; its addresses are, when connecting."""
    policy = AddressPolicy(allow=("10.0.0.0/8",))
    assert policy.refusal("mirror.internal") is None
    assert policy.refusal("mirror.internal", "10.1.2.3") is None
    assert "not in the remote-address policy's allow list" in (policy.refusal("mirror.internal", "192.0.2.7") or "")
    assert policy.refusal("192.0.2.7") and policy.refusal("10.1.2.3") is None


def test_an_allow_list_of_names_refuses_other_names_at_once_and_deny_wins() -> None:
    policy = AddressPolicy(allow=("mirror.example", "*.cdn.example"), deny=("169.254.0.0/16", "bad.cdn.example"))
    assert policy.refusal("mirror.example", "192.0.2.7") is None and policy.refusal("x.cdn.example") is None
    assert "allow list" in (policy.refusal("other.example") or "")
    assert "denied" in (policy.refusal("bad.cdn.example") or "")
    assert "denied" in (policy.refusal("mirror.example", "169.254.169.254") or "")


def test_parse() -> None:
    assert AddressPolicy.parse(None, None) == AddressPolicy()
    assert AddressPolicy.parse(None, "").refusal("169.254.169.254") is None
    assert AddressPolicy.parse("", None) == AddressPolicy(), "an empty allow list allows any host, as none"
    assert AddressPolicy.parse("a.example,,", None).allow == ("a.example",)
    listed = AddressPolicy.parse("10.0.0.0/8, mirror.example", None)
    assert listed.refusal("mirror.example", "192.0.2.7") is None and listed.refusal("other.example", "192.0.2.7")
    with pytest.raises(ValueError, match="deny: 'not a host!' is neither"):
        AddressPolicy.parse(None, "not a host!")


@pytest.mark.parametrize("url", ["http://[oops/x", "http://127.0.0.1:99999/x", "http://127.0.0.1:port/x"])
def test_a_url_that_does_not_parse_is_unsupported(engine: str, url: str, tmp_path: Path) -> None:
    error = failure_of(fetch_one(engine, url, tmp_path)).error
    assert isinstance(error, UnsupportedURL) and "not a URL we can fetch" in error.message


# --- through a proxy ------------------------------------------------------------------------------------


@pytest.fixture
def proxy(serve: Callable[..., str]) -> tuple[Recorder, str]:
    """A forward proxy on 127.0.0.1 that answers every target's /x itself (it forwards nothing)."""
    recorder = Recorder()
    recorder.body("/x", b"from the proxy\n")
    return recorder, serve(recorder)


def test_a_proxy_fetches_an_allowed_target(engine: str, proxy: tuple[Recorder, str], tmp_path: Path) -> None:
    recorder, proxy_url = proxy
    outcome = fetch_one(engine, "http://localhost:9/x", tmp_path, proxy_url=proxy_url)
    assert isinstance(outcome, DownloadResult) and outcome.path.read_bytes() == b"from the proxy\n"
    assert len(recorder.requests) == 1


def test_a_target_the_proxy_would_resolve_to_a_denied_address_is_refused(
    engine: str, proxy: tuple[Recorder, str], tmp_path: Path, only_loopback: list[str]
) -> None:
    recorder, proxy_url = proxy
    error = refusal(fetch_one(engine, "http://metadata.test/x", tmp_path, proxy_url=proxy_url))
    assert "metadata.test (169.254.169.254) is denied by the remote-address policy" in error.message
    assert recorder.requests == [] and only_loopback == []


def test_a_target_that_does_not_resolve_here_is_left_to_the_proxy_unless_there_is_an_allow_list(
    engine: str, proxy: tuple[Recorder, str], tmp_path: Path
) -> None:
    recorder, proxy_url = proxy
    url = "http://nowhere.test/x"
    assert isinstance(fetch_one(engine, url, tmp_path, proxy_url=proxy_url), DownloadResult)
    allow_loopback = AddressPolicy(allow=("127.0.0.0/8",))
    error = refusal(fetch_one(engine, url, tmp_path, proxy_url=proxy_url, address_policy=allow_loopback))
    assert "nowhere.test does not resolve here, so the allow list cannot be checked" in error.message
    assert len(recorder.requests) == 1


@pytest.mark.parametrize(
    ("proxy_url", "shown"),
    [
        ("http://169.254.169.254:3128", "169.254.169.254 is denied"),
        ("http://metadata.test:3128", "metadata.test (169.254.169.254) is denied"),
    ],
)
def test_a_proxy_at_a_denied_address_is_refused(
    engine: str, tmp_path: Path, only_loopback: list[str], proxy_url: str, shown: str
) -> None:
    error = refusal(fetch_one(engine, "http://localhost:9/x", tmp_path, proxy_url=proxy_url))
    assert shown in error.message
    assert only_loopback == []
