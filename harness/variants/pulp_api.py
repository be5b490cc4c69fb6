"""Any Pulp 3 server driven through its REST API, as the seed's perftest.sh drove one with curl and jq.

One run of a `kind = "pulp-api"` variant:

    reset: delete the last run's repository and remote, orphan cleanup (protection time 0), wait
    create a file remote (policy immediate, the variant's settings) and a repository
    POST the repository's sync/ ─> poll the task until it ends ─> read the new version's content count

Timed as the seed timed it: the task's own `finished_at - started_at`; also the wall time from the
POST to the end as observed here (queueing and polling included). The file plugin's endpoints and
fields are Pulp's own, so the same driver runs against pulpcore and against any server speaking
that dialect.

The driver logs in once (Pulp's `login/`: basic auth, then the session cookie and, on unsafe calls,
the CSRF header) and polls with the session. Basic auth on every call would make the server run
Django's password hasher for each poll, 1,000,000 PBKDF2 iterations and about 0.18 s of CPU here:
at a poll every 0.1 s the server's API process took ~70% of a CPU from the sync being timed. A
server without `login/` is called with basic auth throughout.

Why not pulp-glue, Pulp's own client library (0.41, installed with pulp-cli for the tests): it would
disturb what is measured. It authenticates every call with basic auth (its auth providers offer basic,
OAuth2 and TLS, not a session), which is the password hashing above on every poll; its task waits sleep
a whole second between polls, so the wall time from the POST would be known to a second and every reset
(two deletes and an orphan cleanup) would take some three seconds longer; and it first downloads and
validates the server's whole OpenAPI document, caching it under ~/.cache/squeezer/ once per base URL,
which for the servers the harness starts on free ports is a new file per experiment. What it would
replace here is a JSON call, a login and a poll loop.
"""

from __future__ import annotations

import base64
import http.cookiejar
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness import defaults
from harness.errors import HarnessError

__all__ = ["PulpApi", "PulpApiError", "TaskOutcome", "reset", "sync_once", "remote_body", "FINISHED"]

FINISHED = ("completed", "failed", "canceled", "skipped")
"""Task states after which nothing changes (Pulp's TASK_FINAL_STATES)."""
_REMOTES = "remotes/file/file/"
_REPOSITORIES = "repositories/file/file/"
_PEM_SETTINGS = ("ca_cert", "client_cert", "client_key")
"""Pulp takes certificates and keys as PEM text, where pulp-sync's settings name files."""


class PulpApiError(HarnessError, RuntimeError):
    """The Pulp server refused a call or did not answer; the message says which call and why."""


@dataclass
class PulpApi:
    """Where a Pulp 3 API answers (`base_url` without /pulp/api/v3/) and whom to call it as: logged in
    once with basic auth, then by session (the module's docstring says why)."""

    base_url: str
    username: str
    password: str = field(repr=False)
    timeout: float = 30.0
    session: bool | None = field(default=None, init=False)
    """Whether calls go by session: None until the first call logs in, False for a server without `login/`."""
    _cookies: http.cookiejar.CookieJar = field(default_factory=http.cookiejar.CookieJar, init=False, repr=False)

    @property
    def api_root(self) -> str:
        """The REST API's root, to which relative paths are joined."""
        return self.base_url.rstrip("/") + "/pulp/api/v3/"

    def call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """One REST call: `path` relative to the API root, or a `pulp_href` (starting with /); the decoded
        JSON answer (None when empty). PulpApiError with the server's reason on an HTTP error. A session
        the server has forgotten (401, 403) is renewed once by logging in again."""
        if self.session is None:
            self._log_in()
        try:
            return self._send(method, path, body)
        except _Refused as refused:
            if not self.session or refused.code not in (401, 403):
                raise refused.error from None
            self._log_in()
            return self._send_or_raise(method, path, body)

    def _log_in(self) -> None:
        """POST `login/` with basic auth; a session from now on, or basic auth for good where there is none."""
        self._cookies.clear()
        self.session = False
        try:
            self._send("POST", "login/", None)
        except _Refused as refused:
            if refused.code not in (404, 405):
                raise refused.error from None
            return
        self.session = any(cookie.name == "sessionid" for cookie in self._cookies)

    def _send_or_raise(self, method: str, path: str, body: Mapping[str, Any] | None) -> Any:
        try:
            return self._send(method, path, body)
        except _Refused as refused:
            raise refused.error from None

    def _send(self, method: str, path: str, body: Mapping[str, Any] | None) -> Any:
        url = self.base_url.rstrip("/") + path if path.startswith("/") else self.api_root + path
        request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                         headers=self._headers(method, body is not None), method=method)
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self._cookies))
        try:
            with opener.open(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            reason = " ".join(error.read().decode(errors="replace").split())[:500]
            raise _Refused(error.code, PulpApiError(
                f"{self.base_url} answered {method} {path} with {error.code}: {reason}")) from error
        except (urllib.error.URLError, OSError) as error:
            raise PulpApiError(f"{self.base_url} did not answer {method} {path}: {error}") from error
        return json.loads(payload) if payload else None

    def named(self, endpoint: str, name: str) -> dict[str, Any] | None:
        """The object called `name` at `endpoint` (e.g. "repositories/file/file/"), or None."""
        found = self.call("GET", f"{endpoint}?name={urllib.parse.quote(name)}")
        return found["results"][0] if found and found.get("results") else None

    def wait(self, task_href: str, timeout: float, on_poll: Callable[[], None] | None = None) -> dict[str, Any]:
        """Poll the task until it is in a final state and return it; PulpApiError after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            task = self.call("GET", task_href)
            if on_poll is not None:
                on_poll()
            if task["state"] in FINISHED:
                return task
            if time.monotonic() > deadline:
                raise PulpApiError(f"task {task_href} is still {task['state']} after {timeout:g} s")
            time.sleep(defaults.PULP_API_POLL_SECONDS)

    def _headers(self, method: str, with_body: bool) -> dict[str, str]:
        """Basic auth until logged in; then the session's cookie (added by the opener) and, on a call that
        changes something, its CSRF token as Django's CSRF check wants it (header, and a Referer on https)."""
        headers = {"Accept": "application/json"}
        if with_body:
            headers["Content-Type"] = "application/json"
        if not self.session:
            credentials = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            headers["Authorization"] = f"Basic {credentials}"
        elif method not in ("GET", "HEAD", "OPTIONS"):
            token = next((cookie.value for cookie in self._cookies if cookie.name == "csrftoken"), None)
            headers.update({"X-CSRFToken": token or "", "Referer": self.api_root})
        return headers


class _Refused(Exception):
    """An HTTP error answer, kept apart from the error to raise so that `call` can look at its status."""

    def __init__(self, code: int, error: PulpApiError) -> None:
        super().__init__(str(error))
        self.code = code
        self.error = error


@dataclass(frozen=True)
class TaskOutcome:
    """How a sync task ended: its state and error, its own seconds (finished_at - started_at), the wall
    seconds from the POST to the end seen here, and the new version's content count (None without one)."""

    state: str
    error: str | None
    task_seconds: float | None
    wall_seconds: float
    content_count: int | None
    version_href: str | None

    @property
    def ok(self) -> bool:
        """Completed, with the version the sync made."""
        return self.state == "completed" and self.error is None


def reset(api: PulpApi, name: str, timeout: float) -> None:
    """Delete the repository and remote called `name` and every orphan (no protection time), waiting for
    each task: the next run then downloads everything again, as after `pulp-sync reset`."""
    for endpoint in (_REPOSITORIES, _REMOTES):
        found = api.named(endpoint, name)
        if found is not None:
            _finish(api, api.call("DELETE", found["pulp_href"]), timeout, f"deleting {endpoint}{name}")
    _finish(api, api.call("POST", "orphans/cleanup/", {"orphan_protection_time": 0}), timeout, "orphan cleanup")


def sync_once(api: PulpApi, name: str, manifest_url: str, settings: Mapping[str, Any], timeout: float,
              on_poll: Callable[[], None] | None = None) -> TaskOutcome:
    """Create a remote and a repository called `name`, sync one from the other, and wait for the task."""
    remote = api.call("POST", _REMOTES, remote_body(name, manifest_url, settings))
    repository = api.call("POST", _REPOSITORIES, {"name": name})
    started = time.monotonic()
    answer = api.call("POST", repository["pulp_href"] + "sync/", {"remote": remote["pulp_href"]})
    task = api.wait(answer["task"], timeout, on_poll)
    wall = time.monotonic() - started
    version = next((href for href in task.get("created_resources") or [] if "/versions/" in href), None)
    return TaskOutcome(task["state"], _error_of(task), _task_seconds(task), wall,
                       _content_count(api, version), version)


def remote_body(name: str, url: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """A file remote as Pulp takes it: policy immediate (every file downloaded, as pulp-sync does), the
    Remote settings under their own names, headers as a list of one-entry objects, PEM as text."""
    body: dict[str, Any] = {"name": name, "url": url, "policy": "immediate"}
    for key, value in settings.items():
        if key == "headers":
            body[key] = [{header: text} for header, text in value.items()]
        elif key in _PEM_SETTINGS:
            body[key] = Path(value).read_text(encoding="utf-8")
        else:
            body[key] = value
    return body


def _finish(api: PulpApi, answer: Any, timeout: float, what: str) -> None:
    """Wait for the task an answer names (if any); PulpApiError unless it completed."""
    if not answer or "task" not in answer:
        return
    task = api.wait(answer["task"], timeout)
    if task["state"] != "completed":
        raise PulpApiError(f"{what} ended {task['state']}: {_error_of(task) or 'no error given'}")


def _error_of(task: Mapping[str, Any]) -> str | None:
    """Pulp's task error as one line (its `description`), None when there is none."""
    error = task.get("error")
    if not error:
        return None if task["state"] == "completed" else f"the task ended {task['state']}"
    return " ".join(str(error.get("description") or error).split())


def _task_seconds(task: Mapping[str, Any]) -> float | None:
    """finished_at - started_at, the seed's runtime (its jq did the same subtraction)."""
    if not task.get("started_at") or not task.get("finished_at"):
        return None
    started, finished = (datetime.fromisoformat(task[key]) for key in ("started_at", "finished_at"))
    return (finished - started).total_seconds()


def _content_count(api: PulpApi, version_href: str | None) -> int | None:
    """How many file units the version holds (`content_summary.present["file.file"].count`)."""
    if version_href is None:
        return None
    present = api.call("GET", version_href).get("content_summary", {}).get("present", {})
    return int(present.get("file.file", {}).get("count", 0))
