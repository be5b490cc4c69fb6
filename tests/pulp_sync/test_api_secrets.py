"""A remote's secrets on the wire, through the whole service (`pulp-sync api` and a worker, over HTTP):
they reach the host (and proxy) the remote was given with them, and no other, neither when a user
moves the remote to another host or proxy nor when the remote's server redirects a download to one.
Each "host" is an aiohttp server of its own on 127.0.0.1 (another port is another origin) that records
what it got; one serves as a proxy, answering the absolute-form requests sent through it itself."""

from __future__ import annotations

import base64
from contextlib import ExitStack
from typing import Any

import pytest
from aiohttp import hdrs, web

from tests.pulp_sync.conftest import manifest_line
from tests.pulp_sync.test_api import Api, api, pulp_sync, unique  # noqa: F401 - api: the running stack, by name
from tests.servers import serve_app

pytestmark = pytest.mark.slow

REMOTES = "/pulp/api/v3/remotes/file/file/"
REPOSITORIES = "/pulp/api/v3/repositories/file/file/"
SECRETS = {"username": "alice", "password": "s3cret-of-alice", "headers": [{"X-Token": "t0ken-of-alice"}]}
BASIC = "Basic " + base64.b64encode(b"alice:s3cret-of-alice").decode()


class Host:
    """A server that answers PULP_MANIFEST (one file, `body`), the file, and `/moved` with a redirect to
    `redirect_to`; it records the Authorization and X-Token of every request. Each test has a body of
    its own: a file already in the store is not downloaded again."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.seen: list[tuple[str, str | None, str | None]] = []
        self.proxy_authorizations: list[str | None] = []
        self.redirect_to = ""
        self.app = web.Application()
        self.app.router.add_get("/{tail:.*}", self._answer)

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.path, request.headers.get(hdrs.AUTHORIZATION), request.headers.get("X-Token")))
        self.proxy_authorizations.append(request.headers.get(hdrs.PROXY_AUTHORIZATION))
        if request.path.endswith("PULP_MANIFEST"):
            return web.Response(text=manifest_line("moved" if "redirecting" in request.path else "f.bin", self.body))
        if request.path.endswith("/moved"):
            raise web.HTTPFound(self.redirect_to)
        return web.Response(body=self.body)

    def credentials_seen(self) -> set[tuple[str | None, str | None]]:
        return {(authorization, token) for _, authorization, token in self.seen}


def _sync(api: Api, remote: dict[str, Any], name: str) -> dict[str, Any]:
    repository = api.create(REPOSITORIES, {"name": name})
    started = api.call("POST", repository["pulp_href"] + "sync/", {"remote": remote["pulp_href"]})
    assert started.status == 202, started.text
    return api.finished_task(started.json["task"])


def test_moving_a_remote_to_another_host_leaves_its_credentials_behind(api: Api) -> None:
    first, second = Host(b"the first host's file"), Host(b"the second host's file")
    with ExitStack() as stack:
        first_url, second_url = (stack.enter_context(serve_app(host.app)) for host in (first, second))
        remote = api.create(REMOTES, {"name": "moving", "url": first_url + "repo/PULP_MANIFEST", **SECRETS})
        assert _sync(api, remote, "moving-1")["state"] == "completed"

        moved = api.call("PATCH", remote["pulp_href"], {"url": second_url + "repo/PULP_MANIFEST"})
        assert moved.status == 200, moved.text
        shown = api.call("GET", remote["pulp_href"]).json
        assert shown["username"] is None and not shown["headers"]
        assert {"name": "password", "is_set": False} in shown["hidden_fields"]
        assert _sync(api, remote, "moving-2")["state"] == "completed"

    assert first.credentials_seen() == {(BASIC, "t0ken-of-alice")}, "the first host got the credentials"
    assert [path for path, _, _ in second.seen] == ["/repo/PULP_MANIFEST", "/repo/f.bin"]
    assert second.credentials_seen() == {(None, None)}, "the second got none of them"


def test_a_redirect_to_another_host_carries_no_credentials_and_no_configured_header(api: Api) -> None:
    origin, elsewhere = Host(b"redirected bytes"), Host(b"redirected bytes")
    with ExitStack() as stack:
        origin_url, elsewhere_url = (stack.enter_context(serve_app(host.app)) for host in (origin, elsewhere))
        origin.redirect_to = elsewhere_url + "f.bin"
        url = origin_url + "redirecting/PULP_MANIFEST"
        remote = api.create(REMOTES, {"name": "redirecting", "url": url, **SECRETS})
        task = _sync(api, remote, "redirecting")

    assert task["state"] == "completed", task["error"]
    assert [path for path, _, _ in origin.seen] == ["/redirecting/PULP_MANIFEST", "/redirecting/moved"]
    assert origin.credentials_seen() == {(BASIC, "t0ken-of-alice")}
    assert [path for path, _, _ in elsewhere.seen] == ["/f.bin"]
    assert elsewhere.credentials_seen() == {(None, None)}


def test_a_co_owner_cannot_route_the_secrets_through_a_proxy_of_their_own(api: Api) -> None:
    """The issue's attack: alice's plain-http remote syncs through her proxy with her password, a token
    header and the proxy's password; bob, made an owner of it, changes only `proxy_url` to his proxy.
    The change clears what his proxy would read, so the next sync sends it none of them."""
    origin, hers, his = Host(b"the origin's file"), Host(b"through her proxy"), Host(b"through his proxy")
    alice, bob = unique("alice"), unique("bob")
    as_alice, as_bob = ({"Authorization": f"Token {pulp_sync(api.env, 'createuser', name, '--token').strip()}"}
                        for name in (alice, bob))
    with ExitStack() as stack:
        origin_url, her_proxy, his_proxy = (stack.enter_context(serve_app(host.app)) for host in (origin, hers, his))
        body = {"name": unique("proxied"), "url": origin_url + "repo/PULP_MANIFEST", "proxy_url": her_proxy,
                "proxy_username": "alice", "proxy_password": "proxy-s3cret", **SECRETS}
        remote = api.call("POST", REMOTES, body, as_alice).json
        owner = {"role": "file.fileremote_owner", "users": [bob]}
        assert api.call("POST", remote["pulp_href"] + "add_role/", owner, as_alice).status == 201
        assert _sync(api, remote, unique("before"))["state"] == "completed"

        changed = api.call("PATCH", remote["pulp_href"], {"proxy_url": his_proxy}, as_bob)
        assert changed.status == 200, changed.text
        shown = api.call("GET", remote["pulp_href"], headers=as_alice).json
        assert (shown["username"], shown["proxy_username"], shown["headers"]) == (None, None, [])
        assert {"name": "password", "is_set": False} in shown["hidden_fields"]
        assert {"name": "proxy_password", "is_set": False} in shown["hidden_fields"]
        assert _sync(api, remote, unique("after"))["state"] == "completed"

    proxy_basic = "Basic " + base64.b64encode(b"alice:proxy-s3cret").decode()
    assert hers.credentials_seen() == {(BASIC, "t0ken-of-alice")} and set(hers.proxy_authorizations) == {proxy_basic}
    assert [path for path, _, _ in his.seen] == ["/repo/PULP_MANIFEST", "/repo/f.bin"], "the sync went through his"
    assert his.credentials_seen() == {(None, None)} and set(his.proxy_authorizations) == {None}, "and he got nothing"
    assert not origin.seen, "both proxies answered themselves"
