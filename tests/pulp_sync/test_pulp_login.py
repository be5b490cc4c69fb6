"""Pulp's `login/` over real HTTP: a session cookie instead of a password (whose PBKDF2 costs ~0.18 s of
the server's CPU a request), the CSRF header on unsafe methods, logout, and who sees what by session.

The stack is test_api's (`pulp-sync api` and a worker on a throwaway sqlite database); the users are
made with `pulp-sync createuser`, as an operator makes them. The secret key sessions are checked with is
tested in processes of its own.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import pytest
import urllib3

from pulp_sync import defaults
from tests.pulp_sync.test_api import PASSWORD, Answer, Api, api, pulp_sync, unique  # noqa: F401 - api: a fixture

pytestmark = pytest.mark.slow

LOGIN = "/pulp/api/v3/login/"
TASKS = "/pulp/api/v3/tasks/"
REMOTES = "/pulp/api/v3/remotes/file/file/"


@dataclass(frozen=True)
class Session:
    """What a client keeps from `login/`: the answer and its cookies."""

    answer: Answer
    cookies: SimpleCookie

    def headers(self, csrf: bool = False) -> dict[str, str]:
        """The cookies, and no Authorization header; with `csrf`, the CSRF token as an unsafe call needs it."""
        sent = {"Cookie": "; ".join(f"{name}={morsel.value}" for name, morsel in self.cookies.items())}
        return {**sent, "X-CSRFToken": self.cookies["csrftoken"].value} if csrf else sent


def user(stack: Api, prefix: str) -> str:
    """A new user, no admin, with PASSWORD: its name."""
    name = unique(prefix)
    pulp_sync(stack.env, "createuser", name, "--password", PASSWORD)
    return name


def logged_in(stack: Api, headers: dict[str, str]) -> Session:
    """POST login/ with `headers` (basic or token auth), which must start a session."""
    answer = stack.call("POST", LOGIN, headers=headers)
    assert answer.status == 201, answer.text
    cookies = SimpleCookie()
    for header in answer.headers.getlist("Set-Cookie"):
        cookies.load(header)
    return Session(answer, cookies)


def basic(name: str) -> dict[str, str]:
    return urllib3.make_headers(basic_auth=f"{name}:{PASSWORD}")


def remote(name: str, server: str) -> dict[str, Any]:
    return {"name": unique(name), "url": server + "good/PULP_MANIFEST"}


def test_a_session_authenticates_without_a_password(api: Api) -> None:
    name = user(api, "alice")
    session = logged_in(api, basic(name))

    assert session.answer.json == {"username": name}
    assert session.cookies["sessionid"].value and session.cookies["sessionid"]["httponly"], "out of scripts' reach"
    assert session.cookies["csrftoken"].value, "for the X-CSRFToken header of unsafe calls"
    tasks = api.call("GET", TASKS, headers=session.headers())
    assert tasks.status == 200, tasks.text
    assert api.call("GET", LOGIN, headers=session.headers()).json == {"username": name}
    assert api.call("GET", TASKS, headers={}).status == 401, "no cookie, no password: nobody"


def test_a_token_logs_in_too(api: Api) -> None:
    name = unique("robot")
    token = pulp_sync(api.env, "createuser", name, "--token").strip()
    session = logged_in(api, {"Authorization": f"Token {token}"})
    assert api.call("GET", LOGIN, headers=session.headers()).json == {"username": name}


def test_an_unsafe_call_needs_the_csrf_header(api: Api, server: str) -> None:
    session = logged_in(api, basic(user(api, "alice")))

    refused = api.call("POST", REMOTES, remote("no-header", server), headers=session.headers())
    assert refused.status == 403 and "CSRF" in refused.json["detail"], refused.text
    created = api.call("POST", REMOTES, remote("header", server), headers=session.headers(csrf=True))
    assert created.status == 201, created.text
    forged = {**session.headers(), "X-CSRFToken": "x" * 64}
    assert api.call("DELETE", created.json["pulp_href"], headers=forged).status == 403, "a wrong token is none"


def test_logout_ends_the_session(api: Api) -> None:
    session = logged_in(api, basic(user(api, "alice")))
    assert api.call("DELETE", LOGIN, headers=session.headers()).status == 403, "logging out is unsafe too"

    logged_out = api.call("DELETE", LOGIN, headers=session.headers(csrf=True))
    assert logged_out.status == 204, logged_out.text
    for href in (TASKS, LOGIN):
        answer = api.call("GET", href, headers=session.headers())
        assert answer.status == 401, (href, answer.status, "the old cookie still authenticates")


def test_a_new_password_ends_the_users_sessions(api: Api) -> None:
    """Django keeps a digest of the password hash in the session: whoever had the old password is out."""
    name = user(api, "alice")
    session = logged_in(api, basic(name))
    pulp_sync(api.env, "createuser", name, "--password", "a new " + PASSWORD)
    assert api.call("GET", TASKS, headers=session.headers()).status == 401


def test_a_session_sees_what_its_user_sees(api: Api, server: str) -> None:
    alice = logged_in(api, basic(user(api, "alice")))
    bob = logged_in(api, basic(user(api, "bob")))
    hers = api.call("POST", REMOTES, remote("hers", server), headers=alice.headers(csrf=True))
    assert hers.status == 201, hers.text
    href = hers.json["pulp_href"]

    assert api.call("GET", href, headers=alice.headers()).status == 200
    assert api.call("GET", href, headers=bob.headers()).status == 404, "as with bob's password"
    assert api.call("DELETE", href, headers=bob.headers(csrf=True)).status == 404
    assert href not in api.call("GET", REMOTES, headers=bob.headers()).text


def test_the_document_lists_pulps_login_operations(api: Api) -> None:
    document = api.call("GET", "/pulp/api/v3/docs/api.json", headers={}).json
    operations = {method: operation["operationId"] for method, operation in document["paths"][LOGIN].items()}
    assert operations == {"post": "login", "get": "login_read", "delete": "logout"}
    assert "cookieAuth" in document["components"]["securitySchemes"]


def started(home: Path, **env: str) -> subprocess.Popen[str]:
    """A process that starts Django with PULP_SYNC_HOME `home` and `env` (PULP_SYNC_SECRET_KEY and
    DATABASE_URL unset unless given) and prints its SECRET_KEY."""
    environment = {k: v for k, v in os.environ.items() if k not in ("PULP_SYNC_SECRET_KEY", "DATABASE_URL")}
    environment.update(PULP_SYNC_HOME=str(home), DJANGO_SETTINGS_MODULE="pulp_sync.settings", **env)
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    return subprocess.Popen([sys.executable, "-c", code], env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def printed(process: subprocess.Popen[str]) -> str:
    """What the process printed, once it succeeded."""
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    return stdout.strip()


def test_the_secret_key_is_made_once_readable_by_its_owner(tmp_path: Path) -> None:
    keys = {printed(process) for process in [started(tmp_path) for _ in range(6)]}
    kept = tmp_path / defaults.SECRET_KEY_FILE
    assert keys == {kept.read_text().strip()}, "six processes starting at once, one key"
    assert len(kept.read_text().strip()) >= 50 and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert printed(started(tmp_path)) in keys, "read again at the next start"
    assert [path.name for path in tmp_path.iterdir()] == [defaults.SECRET_KEY_FILE], "no partial file left"


def test_a_given_secret_key_is_used_and_nothing_is_made(tmp_path: Path) -> None:
    assert printed(started(tmp_path, PULP_SYNC_SECRET_KEY="shared by every API host")) == "shared by every API host"
    assert not (tmp_path / defaults.SECRET_KEY_FILE).exists()


def test_an_empty_key_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / defaults.SECRET_KEY_FILE).write_text("\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PULP_SYNC_SECRET_KEY", "DATABASE_URL")}
    done = subprocess.run([sys.executable, "-m", "pulp_sync", "repositories"], capture_output=True, text=True,
                          env={**env, "PULP_SYNC_HOME": str(tmp_path)}, timeout=60)
    assert done.returncode == 1
    assert done.stderr == (f"Error: {tmp_path / defaults.SECRET_KEY_FILE} is empty: delete it (a new key is made), "
                           "or set PULP_SYNC_SECRET_KEY\n")
