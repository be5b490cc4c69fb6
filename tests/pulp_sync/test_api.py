"""The REST API over real HTTP: gunicorn and an RQ worker in subprocesses, the real Redis, the fixture server.

Each stack (`pulp-sync api` + `pulp-sync worker`) has a throwaway database, a PULP_SYNC_HOME and an
RQ queue of its own, and is reached only through HTTP, as a client would: sqlite for most tests
(one stack for the module), PostgreSQL for the whole flow.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import urllib3
from aiohttp import hdrs, web
from redis import Redis
from rq import Queue

from downloaders import available
from pulp_base.manifest import parse_manifest
from tests.databases import throwaway_database
from tests.pulp_sync.conftest import manifest_line
from tests.pulp_sync.sync.test_pipeline import manifest_of
from tests.pulp_sync.test_api_users import KEY, NOT_PEM
from tests.servers import self_signed_certificate, serve_app

pytestmark = pytest.mark.slow

PULP_SYNC = Path(sys.executable).parent / "pulp-sync"
REDIS_URL = "redis://127.0.0.1:6379/0"
PASSWORD = "correct horse battery staple"
_API_LINE = re.compile(r"pulp-sync API at (http://\S+)/api/v3/")
_START_SECONDS = 30


@dataclass(frozen=True)
class Answer:
    """One HTTP response: status, body, headers."""

    status: int
    text: str
    headers: urllib3.HTTPHeaderDict

    @property
    def json(self) -> Any:
        return json.loads(self.text)


@dataclass(frozen=True)
class Api:
    """A running API and worker: its base URL (`http://127.0.0.1:<port>`), environment and an admin's token."""

    base: str
    env: dict[str, str]
    token: str

    def call(self, method: str, href: str, body: Any = None, headers: dict[str, str] | None = None) -> Answer:
        """`href` is a path under /api/v3/ (`remotes/`), an href (`/api/v3/...`) or a URL; the admin's
        token authenticates unless `headers` are given. A str body is sent as it is, anything else as JSON."""
        url = href if href.startswith("http") else self.base + (href if href.startswith("/") else "/api/v3/" + href)
        sent = {"Authorization": f"Token {self.token}"} if headers is None else headers
        if body is not None:
            sent = {"Content-Type": "application/json", **sent}
            body = body if isinstance(body, str) else json.dumps(body)
        response = urllib3.request(method, url, body=body, headers=sent, timeout=30, redirect=False)
        return Answer(response.status, response.data.decode(), response.headers)

    def create(self, collection: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.call("POST", collection, body)
        assert answer.status == 201, answer.text
        return answer.json

    def every(self, href: str) -> list[dict[str, Any]]:
        """Every item of a paginated list, following its `next` links."""
        items: list[dict[str, Any]] = []
        page: str | None = href
        while page is not None:
            answer = self.call("GET", page)
            assert answer.status == 200, answer.text
            items.extend(answer.json["results"])
            page = answer.json["next"]
        return items

    def finished_task(self, href: str, timeout: float = 60) -> dict[str, Any]:
        """Poll the task, as a client does, until it completed or failed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            task = self.call("GET", href).json
            if task["state"] in ("completed", "failed"):
                return task
            time.sleep(0.1)
        raise AssertionError(f"task {href} still {task['state']} after {timeout} s")


def pulp_sync(env: dict[str, str], *args: str) -> str:
    """Run the command line; its stdout."""
    done = subprocess.run([str(PULP_SYNC), *args], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def running(command: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A child process with its output in `log`; stopped (SIGTERM, then kill) on exit."""
    with log.open("wb") as output:
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def api_url(process: subprocess.Popen[bytes], log: Path) -> str:
    """The base URL `pulp-sync api` announces once gunicorn listens."""
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        found = _API_LINE.search(log.read_text(errors="replace"))
        if found:
            return found.group(1)
        time.sleep(0.05)
    raise RuntimeError(f"pulp-sync api did not start: {log.read_text(errors='replace')}")


@contextmanager
def running_api(engine: str, folder: Path, workers: int = 2) -> Iterator[Api]:
    """`pulp-sync api` (two workers) and an RQ worker on a throwaway `engine` database and a queue of their own."""
    queue = f"pulp-sync-test-{uuid.uuid4().hex[:12]}"
    with throwaway_database(engine, folder) as database_url:
        env = {
            **os.environ,
            "PULP_SYNC_HOME": str(folder / "home"),
            "DATABASE_URL": database_url,
            "REDIS_URL": REDIS_URL,
            "PULP_SYNC_QUEUE": queue,
        }
        token = pulp_sync(env, "createuser", "tester", "--admin", "--password", PASSWORD, "--token").strip()
        api_command = [str(PULP_SYNC), "api", "--bind", "127.0.0.1:0", "--workers", str(workers)]
        worker_command = [str(PULP_SYNC), "worker", "--queue", queue]
        with running(api_command, env, folder / "api.log") as api, running(worker_command, env, folder / "worker.log"):
            try:
                yield Api(api_url(api, folder / "api.log"), env, token)
            finally:
                Queue(queue, connection=Redis.from_url(REDIS_URL)).delete(delete_jobs=True)


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    """One sqlite stack for the module's tests; each test names its objects uniquely."""
    with tempfile.TemporaryDirectory(prefix="pulp-sync-api-") as folder, running_api("sqlite", Path(folder)) as stack:
        yield stack


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def distribute(api: Api, relative_path: str, body: bytes) -> str:
    """Upload `body` into a new repository, distribute it, and return the path the file is served at."""
    name = unique("big")
    repository = api.create("/pulp/api/v3/repositories/file/file/", {"name": name})
    uploaded = urllib3.request(
        "POST", api.base + "/pulp/api/v3/content/file/files/", headers={"Authorization": f"Token {api.token}"},
        fields={"file": (relative_path, body), "relative_path": relative_path, "repository": repository["pulp_href"]},
        timeout=60,
    )
    assert uploaded.status == 201, uploaded.data[:500]
    api.create("/pulp/api/v3/distributions/file/file/", {"name": name, "base_path": name,
                                                          "repository": repository["pulp_href"]})
    path = f"/pulp/content/{name}/{relative_path}"
    assert urllib3.request("GET", api.base + path, timeout=60).data == body
    return path


def test_the_whole_flow_on_postgresql(tmp_path: Path, server: str, tree: Path) -> None:
    with running_api("postgresql", tmp_path) as api:
        remote = api.create("remotes/", {"name": "good", "url": server + "good/PULP_MANIFEST", "downloader": "futures"})
        repository = api.create("repositories/", {"name": "good"})
        started = api.call("POST", repository["pulp_href"] + "sync/", {"remote": remote["pulp_href"]})
        assert started.status == 202, started.text
        task = api.finished_task(started.json["task"])

        assert task["state"] == "completed", task["error"]
        assert task["pulp_href"] == started.json["task"] and task["error"] in ("", None)
        assert (task["repository"], task["remote"]) == (repository["pulp_href"], remote["pulp_href"])
        assert task["worker"]
        created, begun, ended = (datetime.fromisoformat(task[name]) for name in ("created", "started", "finished"))
        assert created <= begun <= ended
        sizes = {entry.sha256: entry.size for entry in parse_manifest(tree / "good" / "PULP_MANIFEST")}
        assert task["progress"] == {
            "artifacts_total": len(sizes),
            "artifacts_done": len(sizes),
            "bytes_total": sum(sizes.values()),
            "bytes_done": sum(sizes.values()),
            "shards": None,
        }
        assert [t["pulp_href"] for t in api.every("tasks/")] == [task["pulp_href"]]

        version = api.call("GET", task["created_version"]).json
        assert (version["number"], version["repository"], version["content_count"]) == (1, repository["pulp_href"], 12)
        assert api.call("GET", repository["pulp_href"]).json["latest_version_href"] == version["pulp_href"]
        assert [v["pulp_href"] for v in api.every(repository["versions_href"])] == [version["pulp_href"]]

        content = api.every(version["content_href"] + "?limit=5")
        assert {(c["relative_path"], c["sha256"]) for c in content} == manifest_of(tree, "good/PULP_MANIFEST")
        assert {c["sha256"]: c["size"] for c in content} == sizes
        artifacts = api.every("artifacts/")
        assert {a["sha256"] for a in artifacts} == set(sizes)
        assert {c["artifact"] for c in content} == {a["pulp_href"] for a in artifacts}

        assert api.call("DELETE", repository["pulp_href"]).status == 204
        assert api.call("GET", version["pulp_href"]).status == 404
        kept = api.call("GET", task["pulp_href"]).json
        assert (kept["state"], kept["repository"], kept["created_version"]) == ("completed", None, None)
        assert len(api.every("artifacts/")) == len(sizes), "artifacts outlive the repository"


def test_writes_need_a_user(api: Api, server: str) -> None:
    remote = api.create("remotes/", {"name": unique("remote"), "url": server + "good/PULP_MANIFEST"})
    repository = api.create("repositories/", {"name": unique("repository")})
    writes = [
        ("POST", "remotes/", {"name": unique("remote"), "url": server + "good/PULP_MANIFEST"}),
        ("PATCH", remote["pulp_href"], {"downloader": "futures"}),
        ("PUT", remote["pulp_href"], {"name": "renamed", "url": server + "subset/PULP_MANIFEST"}),
        ("DELETE", remote["pulp_href"], None),
        ("POST", "repositories/", {"name": unique("repository")}),
        ("DELETE", repository["pulp_href"], None),
        ("POST", repository["pulp_href"] + "sync/", {"remote": remote["pulp_href"]}),
    ]
    wrong_password = urllib3.make_headers(basic_auth="tester:wrong")  # slow to check (PBKDF2): tried once
    attempts = [(write, headers) for write in writes for headers in ({}, {"Authorization": "Token not-a-token"})]
    for (method, href, body), headers in [*attempts, (writes[0], wrong_password)]:
        answer = api.call(method, href, body, headers=headers)
        assert answer.status == 401, (method, href, headers, answer.text)
        assert answer.headers["WWW-Authenticate"].startswith("Basic")
    assert api.call("GET", remote["pulp_href"]).json == remote, "nothing changed"
    assert api.call("GET", repository["pulp_href"]).json == repository
    assert api.call("GET", repository["versions_href"]).json["count"] == 0
    assert api.call("GET", "tasks/", headers={}).status == 401, "reads need a user too"


def test_basic_auth_and_token_only_users(api: Api, server: str) -> None:
    basic = urllib3.make_headers(basic_auth=f"tester:{PASSWORD}")
    created = api.call("POST", "repositories/", {"name": unique("basic")}, headers=basic)
    assert created.status == 201, created.text

    token = pulp_sync(api.env, "createuser", "robot", "--token").strip()
    assert pulp_sync(api.env, "createuser", "robot", "--token").strip() == token, "one token per user"
    assert api.call("GET", "remotes/", headers={"Authorization": f"Token {token}"}).status == 200
    no_password = urllib3.make_headers(basic_auth="robot:")
    assert api.call("GET", "remotes/", headers=no_password).status == 401, "a token-only user has no password"


def test_users_see_only_their_own_and_admins_all(api: Api, server: str) -> None:
    """Over HTTP with two users of `pulp-sync createuser` (no admins) and the admin: test_api_users.py has the rest."""
    alice, bob = ({"Authorization": f"Token {pulp_sync(api.env, 'createuser', unique(name), '--token').strip()}"}
                  for name in ("alice", "bob"))
    remote = api.call("POST", "remotes/", {"name": unique("hers"), "url": server + "good/PULP_MANIFEST"}, alice).json
    repository = api.call("POST", "repositories/", {"name": unique("hers")}, alice).json
    for method, href, body in [
        ("GET", remote["pulp_href"], None),
        ("PATCH", remote["pulp_href"], {"url": "http://127.0.0.1:9/PULP_MANIFEST"}),
        ("DELETE", remote["pulp_href"], None),
        ("GET", repository["pulp_href"], None),
        ("POST", repository["pulp_href"] + "sync/", {"remote": remote["pulp_href"]}),
        ("GET", repository["versions_href"], None),
        ("GET", "/pulp" + remote["pulp_href"].replace("remotes/", "remotes/file/file/"), None),
    ]:
        answer = api.call(method, href, body, bob)
        assert answer.status == 404, (method, href, answer.text)
    assert remote["pulp_href"] not in api.call("GET", "remotes/", headers=bob).text
    assert api.call("GET", remote["pulp_href"], headers=alice).json == remote, "hers, unchanged"
    assert api.call("GET", remote["pulp_href"]).status == 200, "the admin sees everything"
    assert api.call("GET", "artifacts/", headers=alice).status == 403, "artifacts are for admins"


def test_malformed_json_is_a_400_that_saves_nothing(api: Api) -> None:
    before = api.call("GET", "remotes/").json["count"]
    for body in ('{"name": "half', "[1, 2", "not json"):
        answer = api.call("POST", "remotes/", body)
        assert answer.status == 400 and answer.json["detail"].startswith("JSON parse error"), answer.text
    listed = api.call("POST", "remotes/", [])
    assert listed.status == 400 and listed.json == {
        "non_field_errors": ["Invalid data. Expected a dictionary, but got list."]
    }
    assert api.call("GET", "remotes/").json["count"] == before


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"url": "not a url"}, "url", "Enter a valid URL."),
        ({"download_concurrency": "many"}, "download_concurrency", "A valid integer is required."),
        ({"download_processes": 0}, "download_processes", "download_processes must be from 1 to 256, or auto, not 0"),
        ({"download_processes": "lots"}, "download_processes",
         "download_processes must be a whole number from 1 up, or auto, not 'lots'"),
        ({"download_processes": 2.5}, "download_processes", "expected a whole number from 1 up, or auto, not 2.5"),
        ({"download_concurrency": 0}, "download_concurrency", "{remote}: download_concurrency must be from 1 to 256, "
                                                              "not 0"),
        ({"headers": {"X-A": "a\r\nb"}}, "headers", "{remote}: headers: the value of X-A holds CR, LF or NUL, which "
                                                     "would end the header early"),
        ({"tls_validation": "perhaps"}, "tls_validation", "Must be a valid boolean."),
        ({"name": None}, "name", "This field may not be null."),
        ({"downloader": "nope"}, "downloader", "{remote}: no downloader named 'nope'; installed: {installed}"),
        (
            {"total_timeout": -1},
            "total_timeout",
            "{remote}: total_timeout must be a positive number of seconds, at most 2147483 (24.9 days), or None for "
            "no limit, not -1.0",
        ),
        ({"username": "someone"}, "username", "{remote}: username and password go together: give both or neither"),
        ({"client_key": KEY}, "client_key", "{remote}: client_key needs client_cert"),
        (
            {"url": "http://user:secret@127.0.0.1/PULP_MANIFEST"},
            "url",
            "credentials do not go in the URL (user:password@ or user@): give them in username and password",
        ),
        (
            {"proxy_url": "http://user@127.0.0.1:3128"},
            "proxy_url",
            "credentials do not go in the URL (user:password@ or user@): give them in proxy_username and "
            "proxy_password",
        ),
        ({"ca_cert": "/etc/ssl/certs/ca-certificates.crt"}, "ca_cert", NOT_PEM),
        ({"url": "http://169.254.169.254/PULP_MANIFEST"}, "url",
         "not fetched: 169.254.169.254 is denied by the remote-address policy (http://169.254.169.254/PULP_MANIFEST)"),
    ],
)
def test_bad_remote_values_are_field_messages(
    api: Api, server: str, fields: dict[str, Any], field: str, message: str
) -> None:
    name = unique("remote")
    installed = ", ".join(sorted(available()))
    expected = {field: [message.format(remote=f"remote {name!r}", installed=installed)]}
    created = api.call("POST", "remotes/", {"name": name, "url": server + "good/PULP_MANIFEST", **fields})
    assert (created.status, created.json) == (400, expected)

    remote = api.create("remotes/", {"name": name, "url": server + "good/PULP_MANIFEST"})
    patched = api.call("PATCH", remote["pulp_href"], fields)
    assert (patched.status, patched.json) == (400, expected), "the same check on update"
    assert api.call("GET", remote["pulp_href"]).json == remote, "a refused update changes nothing"


def test_bad_names_and_sync_bodies_are_field_messages(api: Api, server: str) -> None:
    name = unique("remote")
    remote = api.create("remotes/", {"name": name, "url": server + "good/PULP_MANIFEST"})
    duplicate = api.call("POST", "remotes/", {"name": name, "url": server + "good/PULP_MANIFEST"})
    assert (duplicate.status, duplicate.json) == (400, {"name": ["remote with this name already exists."]})
    assert api.call("POST", "repositories/", {}).json == {"name": ["This field is required."]}

    sync = api.create("repositories/", {"name": unique("repository")})["pulp_href"] + "sync/"
    bodies = {
        "{}": {"remote": ["This field is required."]},
        json.dumps({"remote": sync}): {"remote": ["Invalid hyperlink - Incorrect URL match."]},
        json.dumps({"remote": "/api/v3/remotes/999999/"}): {"remote": ["Invalid hyperlink - Object does not exist."]},
        json.dumps({"remote": 999999}): {"remote": ["Invalid hyperlink - Object does not exist."]},
        json.dumps({"remote": str(2**64)}): {"remote": ["Invalid hyperlink - Object does not exist."]},
        json.dumps({"remote": [remote["id"]]}): {"remote": ["Incorrect type. Expected URL string, received list."]},
    }
    for body, errors in bodies.items():
        answer = api.call("POST", sync, body)
        assert (answer.status, answer.json) == (400, errors), body
    assert api.call("POST", "repositories/999999/sync/", {"remote": remote["id"]}).status == 404


def test_a_remote_by_id_syncs_too(api: Api, server: str) -> None:
    remote = api.create("remotes/", {"name": unique("remote"), "url": server + "subset/PULP_MANIFEST"})
    repository = api.create("repositories/", {"name": unique("repository")})
    started = api.call("POST", repository["pulp_href"] + "sync/", {"remote": str(remote["id"])})
    assert started.status == 202, started.text
    task = api.finished_task(started.json["task"])
    assert task["state"] == "completed", task["error"]
    assert api.call("GET", task["created_version"]).json["content_count"] == 4


def test_secrets_are_never_echoed(api: Api, server: str, tmp_path: Path) -> None:
    password, proxy_password = f"password-{uuid.uuid4().hex}", f"proxy-{uuid.uuid4().hex}"
    cert, key = (path.read_text() for path in self_signed_certificate(tmp_path))
    secrets = {"password": password, "proxy_password": proxy_password, "client_key": key}
    body = {
        "name": unique("secretive"),
        "url": server + "missing/PULP_MANIFEST",
        "username": "someone",
        "proxy_username": "proxy-user",
        "client_cert": cert,
        **secrets,
    }
    answers = [api.call("POST", "remotes/", body)]
    remote = answers[0].json
    assert answers[0].status == 201, answers[0].text
    assert remote["hidden_fields"] == [{"name": name, "is_set": True} for name in secrets]
    answers.append(api.call("PUT", remote["pulp_href"], {**body, "url": server + "nowhere/PULP_MANIFEST"}))
    assert answers[-1].status == 200, answers[-1].text
    answers.append(api.call("PATCH", remote["pulp_href"], {"password": password, "total_timeout": -1}))
    assert answers[-1].status == 400

    repository = api.create("repositories/", {"name": unique("repository")})
    started = api.call("POST", repository["pulp_href"] + "sync/", {"remote": remote["pulp_href"]})
    task = api.finished_task(started.json["task"])
    assert task["state"] == "failed" and task["error"], "a readable error"
    reads = (remote["pulp_href"], "remotes/", task["pulp_href"], "tasks/")
    answers += [started, *(api.call("GET", href) for href in reads)]
    for answer in answers:
        for name, secret in {**secrets, "key material": key.splitlines()[1]}.items():
            assert secret not in answer.text, f"{name} echoed in {answer.text}"


def test_the_openapi_schema_is_served_to_anyone(api: Api) -> None:
    answer = api.call("GET", "docs/api.json", headers={})
    assert answer.status == 200 and answer.headers["Content-Type"].startswith("application/vnd.oai.openapi+json")
    schema = answer.json
    assert schema["openapi"].startswith("3.")
    for path in ("/api/v3/remotes/", "/api/v3/repositories/{id}/sync/", "/api/v3/tasks/{id}/", "/api/v3/artifacts/"):
        assert path in schema["paths"], path
    assert "/api/v3/repositories/{repository_pk}/versions/{number}/content/" in schema["paths"]
    remote = schema["components"]["schemas"]["Remote"]["properties"]
    assert all(remote[name].get("writeOnly") for name in ("password", "proxy_password", "client_key"))
    assert {"basicAuth", "tokenAuth"} <= set(schema["components"]["securitySchemes"])
    assert schema["paths"]["/api/v3/repositories/{id}/sync/"]["post"]["responses"].keys() == {"202"}


def test_the_openapi_documents_answer_many_clients_at_once(tmp_path: Path) -> None:
    """60 GETs at once of each dialect's document, on a fresh API (nothing generated yet): all 200, each
    dialect's alike. drf-spectacular's generation is not thread-safe (its settings are global, patched by
    each document's view): 24 to 46 of 60 were 500s, which pulp-cli, reading the document first, shows."""
    documents = ["/pulp/api/v3/docs/api.json", "/api/v3/docs/api.json"] * 60
    with pytest.MonkeyPatch.context() as patch:
        # all from one address: nginx's bound on an address's requests in progress is not this test's subject
        patch.setenv("PULP_SYNC_API_CLIENT_REQUESTS", str(len(documents)))
        with running_api("sqlite", tmp_path) as stack, ThreadPoolExecutor(max_workers=len(documents)) as pool:
            answers = list(pool.map(lambda path: stack.call("GET", path, headers={}), documents))
    assert [answer.status for answer in answers] == [200] * len(documents), {a.status: a.text[:300] for a in answers}
    for path in set(documents):
        assert len({answer.text for answer, asked in zip(answers, documents, strict=True) if asked == path}) == 1


def test_every_write_route_needs_a_user(api: Api) -> None:
    """Each write of the OpenAPI schema, and writes to the read-only collections, answer 401 to anyone unknown."""
    schema = api.call("GET", "docs/api.json", headers={}).json
    ids = {"{id}": "1", "{repository_pk}": "1", "{number}": "1"}
    writes = [
        (method.upper(), re.sub(r"\{\w+\}", lambda m: ids[m.group(0)], path))
        for path, operations in schema["paths"].items()
        for method in operations
        if method in ("post", "put", "patch", "delete")
    ]
    assert len(writes) >= 9, writes
    read_only = ["tasks/", f"tasks/{uuid.uuid4()}/", "artifacts/", "artifacts/1/", "repositories/1/versions/"]
    writes += [(method, "/api/v3/" + path) for path in read_only for method in ("POST", "PUT", "DELETE")]
    for method, href in writes:
        for headers in ({}, {"Authorization": "Token not-a-token"}):
            answer = api.call(method, href, {}, headers=headers)
            assert answer.status == 401, (method, href, headers, answer.status, answer.text)


def test_no_secret_in_logs_errors_reports_or_answers(tmp_path: Path) -> None:
    """A sync that authenticates to its remote and proxy with every kind of secret, and fails: no secret
    in the API's and the worker's logs, the task's error and report, the API's answers or `pulp-sync tasks`."""
    cert, key = self_signed_certificate(tmp_path)
    password, proxy_password = f"remote-{uuid.uuid4().hex}", f"proxy-{uuid.uuid4().hex}"
    received: list[tuple[str | None, str | None]] = []

    async def remote(request: web.Request) -> web.Response:
        """Remote and proxy in one: absolute-form requests come here through the "proxy"; files fail."""
        received.append((request.headers.get(hdrs.AUTHORIZATION), request.headers.get(hdrs.PROXY_AUTHORIZATION)))
        if request.path.endswith("PULP_MANIFEST"):
            return web.Response(text=manifest_line("f.bin", b"never served"))
        return web.Response(status=503, text=f"no luck, {password}? no.")

    app = web.Application()
    app.router.add_get("/{tail:.*}", remote)
    with serve_app(app) as url, running_api("sqlite", tmp_path) as api:
        body = {
            "name": "secretive",
            "url": url + "repo/PULP_MANIFEST",
            "username": "someone",
            "password": password,
            "proxy_url": url,
            "proxy_username": "proxy-user",
            "proxy_password": proxy_password,
            "client_cert": cert.read_text(),
            "client_key": key.read_text(),
            "max_retries": 0,
        }
        answers = [api.call("POST", "remotes/", body)]
        assert answers[0].status == 201, answers[0].text
        repository = api.create("repositories/", {"name": "secretive"})
        answers.append(api.call("POST", repository["pulp_href"] + "sync/", {"remote": answers[0].json["pulp_href"]}))
        task = api.finished_task(answers[-1].json["task"])
        reads = (answers[0].json["pulp_href"], "remotes/", task["pulp_href"], "tasks/", repository["pulp_href"])
        answers += [api.call("GET", href) for href in reads]
        listed = subprocess.run([str(PULP_SYNC), "tasks", "--json"], env=api.env, capture_output=True, text=True)
        token = api.token

    assert task["state"] == "failed"
    assert task["error"].startswith("could not download f.bin after 1 attempt(s): HTTP 503")
    basic = "Basic " + base64.b64encode(f"someone:{password}".encode()).decode()
    proxy_basic = "Basic " + base64.b64encode(f"proxy-user:{proxy_password}".encode()).decode()
    assert received and all(pair == (basic, proxy_basic) for pair in received), "the sync did authenticate"
    secrets = {
        "password": password,
        "proxy_password": proxy_password,
        "token": token,
        "key material": key.read_text().splitlines()[1],
        "password (base64)": basic.split()[1],
    }
    places = {
        "api.log": (tmp_path / "api.log").read_text(errors="replace"),
        "worker.log": (tmp_path / "worker.log").read_text(errors="replace"),
        "task error and report": json.dumps([task["error"], task["report"]]),
        "pulp-sync tasks": listed.stdout + listed.stderr,
        **{f"answer {n}": answer.text for n, answer in enumerate(answers)},
    }
    assert "Task " in places["worker.log"] and listed.returncode == 0, "the logs and the listing are there"
    for place, text in places.items():
        for name, secret in secrets.items():
            assert secret not in text, f"{name} in {place}"
