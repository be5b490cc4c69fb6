"""A remote no sync could use is refused where it is given, by a message naming the field: a 400 from
both dialects of the API, a usage error (exit 2, one `Error:` line naming the option) from the command
line; and a NUL character, which PostgreSQL stores in no text, is a 400 in any body or filter rather
than the database's 500. The rules are downloaders/settings.py's (tests/downloaders/test_settings.py
checks them one by one, tests/harness/experiment/test_spec.py in a spec)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from pulp_sync.models import Remote
from tests.pulp_sync.cli.test_remote_options import invoke
from tests.pulp_sync.test_api import running_api
from tests.pulp_sync.test_pulp_api import client  # noqa: F401 - a fixture, used by name

URL = "http://127.0.0.1:9/PULP_MANIFEST"
COLLECTIONS = {"pulp": "/pulp/api/v3/remotes/file/file/", "deprecated": "/api/v3/remotes/"}

UNUSABLE: list[tuple[str, Any, str]] = [
    ("url", "ftp://127.0.0.1/PULP_MANIFEST", "only http and https URLs are fetched, not 'ftp'"),
    ("proxy_url", "ftp://127.0.0.1:21", "only http and https URLs are fetched, not 'ftp'"),
    ("headers", {"X-Trace": "a\r\nX-Injected: 1"}, "the value of X-Trace holds CR, LF or NUL"),
    ("headers", {"X Trace": "v"}, "'X Trace' is not a header name"),
    ("sock_read_timeout", 1e308, "must be a positive number of seconds, at most 2147483"),
    ("rate_limit", 1e-308, "is requests per second, finite and at least"),
    ("download_concurrency", 2_000_000_000, "download_concurrency must be from 1 to 256, not 2000000000"),
]
"""(field, value, words of the refusal): a remote the API took before (201), and a sync then failed
on (OverflowError from the futures engine, a header the engine refused) or used (a CR LF in a header
is one more header in libcurl's requests; an ftp:// proxy an HTTP proxy to aiohttp; a concurrency of
2,000,000,000, for which the futures engine filled its pool for 13 minutes, 5.3 GB, before the first
download)."""


def _body(collection: str, field: str, value: Any) -> dict[str, Any]:
    """A remote's body with `value` in `field`, in the collection's dialect (the Pulp dialect's headers
    are a list of one-entry objects)."""
    shaped = [{name: text} for name, text in value.items()] if field == "headers" and "pulp" in collection else value
    return {"name": "r", "url": URL, field: shaped}


def _refusal(answer: Any) -> str:
    """A 400's errors as one text, each field's as `field: message` (non-field errors as they are)."""
    assert answer.status_code == 400, answer.content
    errors = answer.json()
    return "; ".join(
        f"{message}" if field in ("non_field_errors", "detail") else f"{field}: {message}"
        for field, messages in errors.items()
        for message in (messages if isinstance(messages, list) else [messages])
    )


def _names(text: str, field: str) -> bool:
    return re.search(rf"(^|\W){re.escape(field)}\W", text) is not None


@pytest.mark.parametrize("collection", COLLECTIONS.values(), ids=COLLECTIONS)
@pytest.mark.parametrize(("field", "value", "message"), UNUSABLE, ids=lambda v: v if isinstance(v, str) else None)
def test_the_api_refuses_a_remote_no_sync_can_use(client: APIClient, collection: str, field: str, value: Any,
                                                   message: str) -> None:
    refusal = _refusal(client.post(collection, _body(collection, field, value), format="json"))
    assert message in refusal and _names(refusal, field), refusal
    assert not Remote.objects.exists()


@pytest.mark.parametrize("collection", COLLECTIONS.values(), ids=COLLECTIONS)
def test_an_update_is_refused_alike(client: APIClient, collection: str) -> None:
    created = client.post(collection, {"name": "r", "url": URL}, format="json")
    assert created.status_code == 201, created.content
    href = created.json()["pulp_href"]
    for field, value, message in UNUSABLE:
        body = _body(collection, field, value)
        del body["name"], body["url"]
        body.setdefault(field, value)
        refusal = _refusal(client.patch(href, body, format="json"))
        assert message in refusal and _names(refusal, field), refusal
    remote = Remote.objects.get()
    assert (remote.url, remote.proxy_url, remote.headers, remote.sock_read_timeout) == (URL, None, None, None)


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"name": "r", "url": URL, "headers": {"X-Trace": "a\u0000b"}}, 'headers["X-Trace"]'),
        ({"name": "r\u0000", "url": URL}, "name"),
        ({"name": "r", "url": URL, "username": "me\u0000", "password": "p"}, "username"),
        ({"name": "r", "url": URL, "headers": {"X\u0000": "v"}}, 'headers["X\\u0000"]'),
    ],
)
def test_a_nul_character_anywhere_in_a_body_is_refused_naming_where(client: APIClient, body: dict[str, Any],
                                                                    where: str) -> None:
    refusal = _refusal(client.post(COLLECTIONS["deprecated"], body, format="json"))
    assert refusal == f"JSON parse error - {where} holds a NUL character (\\u0000), which no database stores"


@pytest.mark.parametrize(
    ("args", "env", "option", "message"),
    [
        (("--header", "X-Trace: a\r\nX-Injected: 1"), {}, "--header", "the value of X-Trace holds CR, LF or NUL"),
        (("--header", "X Trace: v"), {}, "--header", "headers: 'X Trace' is not a header name"),
        (("--header-env", "X-Trace=TRACE"), {"TRACE": "a\nb"}, "--header-env", "the value of X-Trace holds CR, LF"),
        (("--sock-read-timeout", "1e308"), {}, "--sock-read-timeout",
         "sock_read_timeout must be a positive number of seconds, at most 2147483"),
        (("--total-timeout", "3000000"), {}, "--total-timeout", "total_timeout must be a positive number of seconds"),
        (("--rate-limit", "1e-308"), {}, "--rate-limit", "rate_limit is requests per second, finite and at least"),
        (("--proxy-url", "ftp://127.0.0.1:21"), {}, "--proxy-url",
         "proxy_url: only http and https URLs are fetched, not 'ftp'"),
    ],
)
def test_the_command_line_refuses_them_as_usage_errors(db: Path, server: str, args: tuple[str, ...],
                                                       env: dict[str, str], option: str, message: str) -> None:
    result = invoke("sync", server + "good/PULP_MANIFEST", *args, env=env)
    assert result.exit_code == 2, result.output
    [line] = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert re.match(f"Error: Invalid value for '?{option}'?: ", line) and message in line, line
    assert not Remote.objects.exists(), "nothing is saved"


@pytest.mark.slow
def test_on_postgresql_a_nul_character_is_a_400_not_a_500(tmp_path: Path) -> None:
    """PostgreSQL stores no NUL in text or jsonb, and refuses a query holding one: each was a 500."""
    with running_api("postgresql", tmp_path) as api:
        pulp, deprecated = COLLECTIONS["pulp"], COLLECTIONS["deprecated"]
        for collection in (pulp, deprecated):
            refused = api.call("POST", collection, _body(collection, "headers", {"X-Trace": "a\u0000b"}))
            assert refused.status == 400, refused.text
            assert refused.json["detail"].startswith("JSON parse error - headers"), refused.text
        for query in ("name=a%00b", "name__contains=%00", "name__in=a,b%00"):
            refused = api.call("GET", f"{pulp}?{query}")
            assert refused.status == 400, refused.text
            assert refused.json == {query.split("=")[0]: ["Null characters are not allowed."]}
        refused = api.call("GET", "/pulp/api/v3/tasks/?state__in=%00")
        assert (refused.status, refused.json) == (400, {"state__in": ["Null characters are not allowed."]})

        api.create(pulp, {"name": "after", "url": URL, "headers": [{"X-Trace": "a\tb"}]})
        assert [remote["name"] for remote in api.every(pulp)] == ["after"], "the API goes on answering"
