"""pulp-cli, Pulp's own client, against `pulp-sync api` and a `pulp-sync worker`: real processes on
127.0.0.1, the real Redis, the fixture server. Nothing is mocked: the `pulp` command reads the
dialect's OpenAPI document and calls it as it would call Pulp.

The stack is test_api's (a throwaway sqlite database, a PULP_SYNC_HOME and an RQ queue of its own);
pulp-cli's configuration and its cache of the document live in a temp HOME, written by `pulp config
create`. Each test names its objects uniquely.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fixtures import NetworkProfile
from fixtures.server import serve_in_background
from pulp_sync.api.pulp.schema import APP_VERSIONS
from tests.pulp_sync.conftest import write_repository
from tests.pulp_sync.test_api import PASSWORD, Api, pulp_sync, running_api, unique

pytestmark = pytest.mark.slow

PULP = Path(sys.executable).parent / "pulp"
_STARTED = re.compile(r"Started background task (/pulp/api/v3/tasks/[0-9a-f-]+/)")
SLOW = NetworkProfile(per_connection_bps=100_000, name="slow-for-tests")
"""About 2.6 s per 256 kB file, 21 s for the eight: a sync is surely still running when it is canceled,
even on a busy machine where each pulp-cli call takes seconds."""


@dataclass(frozen=True)
class Pulp:
    """The `pulp` command, configured for the stack (its config file in `env`'s HOME)."""

    env: dict[str, str]

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PULP), *args], env=self.env, capture_output=True, text=True, timeout=120)

    def json(self, *args: str) -> Any:
        """Run it, check it succeeded, and parse what it printed."""
        done = self(*args)
        assert done.returncode == 0, f"pulp {' '.join(args)}: {done.stderr}"
        return json.loads(done.stdout)

    def background(self, *args: str) -> str:
        """Run a command that starts a task without waiting for it (`--background`); the task's href."""
        done = self("--background", *args)
        started = _STARTED.search(done.stderr)
        assert started, f"pulp {' '.join(args)}: {done.returncode} {done.stderr}"
        return started.group(1)


@pytest.fixture(scope="module")
def stack() -> Iterator[Api]:
    with tempfile.TemporaryDirectory(prefix="pulp-sync-cli-") as folder, running_api("sqlite", Path(folder)) as api:
        yield api


def configured(stack: Api, home: Path, user: str = "tester") -> Pulp:
    """pulp-cli for the stack as `user` (the stack's admin unless said), with a config file in `home` made
    by `pulp config create`, as a user would."""
    assert PULP.exists(), "pulp-cli is not installed: pip install -e '.[test]' (setup.py's test extra)"
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"), "XDG_CACHE_HOME": str(home)}
    command = Pulp(env)
    made = command("config", "create", "--base-url", stack.base, "--username", user, "--password", PASSWORD)
    assert made.returncode == 0, made.stderr
    return command


@pytest.fixture(scope="module")
def pulp(stack: Api, tmp_path_factory: pytest.TempPathFactory) -> Pulp:
    return configured(stack, tmp_path_factory.mktemp("pulp-cli-home"))


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """big/: eight files of 256 kB, served at 100 kB/s a connection."""
    root = tmp_path_factory.mktemp("slow-tree")
    write_repository(root / "big", {f"big-{n}.bin": os.urandom(256_000) for n in range(8)})
    with serve_in_background(root, SLOW) as running:
        yield running.url


def test_status_remote_repository_sync_versions_tasks(pulp: Pulp, server: str, tree: Path) -> None:
    """The flow of the brief, each command checked on its output."""
    status = pulp.json("status")
    assert {v["component"]: v["version"] for v in status["versions"]} == APP_VERSIONS
    assert (status["database_connection"], status["redis_connection"]) == ({"connected": True}, {"connected": True})
    assert len(status["online_workers"]) == 1, "the stack's one worker, on its own queue"
    assert status["storage"]["total"] >= status["storage"]["free"] > 0

    remote_name, repository_name = unique("r"), unique("repo")
    remote = pulp.json("file", "remote", "create", "--name", remote_name, "--url", server + "good/PULP_MANIFEST")
    assert remote["pulp_href"].startswith("/pulp/api/v3/remotes/file/file/")
    assert (remote["name"], remote["policy"], remote["headers"]) == (remote_name, "immediate", [])
    repository = pulp.json("file", "repository", "create", "--name", repository_name, "--remote", remote_name)
    assert (repository["remote"], repository["latest_version_href"]) == (remote["pulp_href"], None)

    synced = pulp("file", "repository", "sync", "--name", repository_name)
    assert synced.returncode == 0, synced.stderr
    task_href = _STARTED.search(synced.stderr).group(1)  # type: ignore[union-attr]
    assert synced.stderr.rstrip().endswith("Done."), "it waited for the task"

    versions = pulp.json("file", "repository", "version", "list", "--repository", repository_name)
    lines = len((tree / "good" / "PULP_MANIFEST").read_text(encoding="utf-8").splitlines())
    assert [version["number"] for version in versions] == [1]
    summary = versions[0]["content_summary"]
    assert summary["present"]["file.file"]["count"] == summary["added"]["file.file"]["count"] == lines
    assert summary["removed"] == {}
    listed = pulp.json("file", "content", "list", "--repository-version", versions[0]["pulp_href"], "--limit", "100")
    assert len(listed) == lines

    [task] = [task for task in pulp.json("task", "list") if task["pulp_href"] == task_href]
    assert (task["state"], task["name"], task["error"]) == ("completed", "sync", None)
    assert task["created_resources"] == [versions[0]["pulp_href"]]
    assert task["reserved_resources_record"] == [repository["pulp_href"], "shared:" + remote["pulp_href"]]
    artifacts = task["progress_reports"][0]
    assert (artifacts["code"], artifacts["state"], artifacts["done"]) == ("sync.downloading.artifacts", "completed", 11)
    assert artifacts["total"] == 11, "twelve lines, one body twice"
    assert task["started_at"] <= task["finished_at"]
    [worker] = pulp.json("worker", "list")
    assert task["worker"] == worker["pulp_href"], "the RQ worker that ran it, as an href"

    destroyed = pulp("file", "remote", "destroy", "--name", remote_name)
    assert destroyed.returncode == 0, destroyed.stderr
    assert pulp.json("file", "remote", "list", "--name", remote_name) == []
    assert pulp.json("file", "repository", "show", "--name", repository_name)["remote"] is None


def test_pulp_cli_shows_the_servers_refusals(pulp: Pulp, server: str) -> None:
    name = unique("r")
    url = server + "missing/PULP_MANIFEST"
    pulp.json("file", "remote", "create", "--name", name, "--url", url, "--max-retries", "0")
    for args, message in [
        (("file", "remote", "update", "--name", name, "--policy", "on_demand"), "only immediate is supported"),
        (("file", "remote", "update", "--name", name, "--labels", '{"a": "b"}'), "labels are not supported"),
        (("file", "remote", "update", "--name", name, "--total-timeout", "-1"), "total_timeout must be a positive"),
    ]:
        refused = pulp(*args)
        assert refused.returncode == 1 and message in refused.stderr, refused.stderr

    repository = unique("repo")
    pulp.json("file", "repository", "create", "--name", repository)
    no_remote = pulp("file", "repository", "sync", "--name", repository)
    assert no_remote.returncode == 1 and "does not have a default remote" in no_remote.stderr
    failed = pulp("file", "repository", "sync", "--name", repository, "--remote", name)
    assert failed.returncode == 1, failed.stderr
    assert re.search(r"Task /pulp/api/v3/tasks/\S+ failed: 'could not download gone.iso after 1 attempt", failed.stderr)
    mirror = pulp("file", "repository", "sync", "--name", repository, "--remote", name, "--no-mirror")
    assert mirror.returncode == 1 and "only mirror syncs are supported" in mirror.stderr


def test_pulp_cli_cancels_a_waiting_and_a_running_sync(pulp: Pulp, stack: Api, slow_server: str, server: str) -> None:
    """One worker: the first sync runs (the forking worker's horse is stopped), the second waits."""
    remote, repository = unique("slow"), unique("repo")
    pulp.json("file", "remote", "create", "--name", remote, "--url", slow_server + "big/PULP_MANIFEST",
              "--download-concurrency", "1")
    pulp.json("file", "repository", "create", "--name", repository, "--remote", remote)
    running = pulp.background("file", "repository", "sync", "--name", repository)
    waiting = pulp.background("file", "repository", "sync", "--name", repository)
    _wait_until(lambda: stack.call("GET", running).json["progress_reports"][0]["done"] > 0)
    assert stack.call("GET", waiting).json["state"] == "waiting"

    for href in (waiting, running):
        canceled = pulp("task", "cancel", "--href", href)
        assert canceled.returncode == 0 and "Done." in canceled.stderr, canceled.stderr
        task = pulp.json("task", "show", "--href", href)
        assert (task["state"], task["error"], task["created_resources"]) == ("canceled", None, [])
    assert pulp.json("file", "repository", "version", "list", "--repository", repository) == []
    workspaces = Path(stack.env["PULP_SYNC_HOME"], "artifacts", "tmp")
    assert not list(workspaces.glob(f"task-{running.split('/')[-2]}-*")), "the partial downloads are removed"
    again = pulp("task", "cancel", "--href", running)
    assert again.returncode == 1 and "is in state canceled and cannot be canceled" in again.stderr

    assert pulp("file", "remote", "update", "--name", remote, "--url", server + "subset/PULP_MANIFEST").returncode == 0
    synced = pulp("file", "repository", "sync", "--name", repository)
    assert synced.returncode == 0, "the worker goes on taking tasks: " + synced.stderr
    [version] = pulp.json("file", "repository", "version", "list", "--repository", repository)
    assert version["content_summary"]["present"]["file.file"]["count"] == 4


def test_pulp_cli_cleans_up_orphans(pulp: Pulp, stack: Api, tmp_path: Path) -> None:
    """Content no version holds (its repository is gone) is deleted, with its artifacts' files."""
    name = unique("orphans")
    write_repository(tmp_path / name, {f"{name}-{n}.bin": os.urandom(1000) for n in range(3)})
    with serve_in_background(tmp_path) as files:
        pulp.json("file", "remote", "create", "--name", name, "--url", f"{files.url}{name}/PULP_MANIFEST")
        pulp.json("file", "repository", "create", "--name", name, "--remote", name)
        assert pulp("file", "repository", "sync", "--name", name).returncode == 0
    [version] = pulp.json("file", "repository", "version", "list", "--repository", name)
    held = pulp.json("file", "content", "list", "--repository-version", version["pulp_href"])
    assert len(held) == 3
    assert pulp("file", "repository", "destroy", "--name", name).returncode == 0

    task = pulp.json("orphan", "cleanup")
    assert (task["state"], task["name"]) == ("completed", "orphan_cleanup")
    counts = task["result"]
    assert counts["content_removed"] == 3, "no other content is an orphan"
    assert counts["artifacts_removed"] >= 3, "and artifacts a failed or canceled sync downloaded are"
    assert [report["done"] for report in task["progress_reports"]] == [3, counts["artifacts_removed"]]
    for content in held:
        assert pulp("file", "content", "show", "--href", content["pulp_href"]).returncode == 1, "deleted"
    store = Path(stack.env["PULP_SYNC_HOME"], "artifacts", "artifact")
    assert not [content for content in held if (store / content["sha256"][:2] / content["sha256"][2:]).exists()]


def test_pulp_cli_gives_and_takes_roles(pulp: Pulp, stack: Api, server: str, tmp_path: Path) -> None:
    """The admin's remote, shown to another user by the viewer role, then hidden again."""
    user, name, role = unique("viewer"), unique("r"), "file.fileremote_viewer"
    pulp_sync(stack.env, "createuser", user, "--password", PASSWORD)
    viewer = configured(stack, tmp_path, user)
    pulp.json("file", "remote", "create", "--name", name, "--url", server + "good/PULP_MANIFEST")
    assert viewer("file", "remote", "show", "--name", name).returncode == 1, "not theirs"

    added = pulp.json("file", "remote", "role", "add", "--name", name, "--role", role, "--user", user)
    assert added == {"role": role, "users": [user], "groups": []}
    assert added in pulp.json("file", "remote", "role", "list", "--name", name)["roles"]
    assert viewer.json("file", "remote", "show", "--name", name)["name"] == name
    mine = viewer.json("file", "remote", "role", "my-permissions", "--name", name)
    assert mine == {"permissions": ["file.view_fileremote"]}
    refused = viewer("file", "remote", "update", "--name", name, "--url", server + "subset/PULP_MANIFEST")
    assert refused.returncode == 1 and "not authorized" in refused.stderr, refused.stderr

    pulp.json("file", "remote", "role", "remove", "--name", name, "--role", role, "--user", user)
    assert viewer("file", "remote", "show", "--name", name).returncode == 1, "hidden again"


def test_pulp_cli_lists_workers_and_users_and_an_admin_deletes_a_user(
    pulp: Pulp, stack: Api, tmp_path: Path
) -> None:
    """`pulp worker` and `pulp user` answer (they ended in pulp-cli's KeyError): the stack's worker, by name
    and by href; every user for the admin, oneself for anyone else; `user destroy` for admins only, as
    `pulp-sync deleteuser`."""
    [worker] = pulp.json("worker", "list")
    assert (worker["online"], worker["missing"], worker["current_task"]) == (True, False, None)
    assert re.fullmatch("/pulp/api/v3/workers/[0-9a-f-]{36}/", worker["pulp_href"]), "a UUID, as Pulp's"
    assert _steady(pulp.json("worker", "show", "--name", worker["name"])) == _steady(worker)
    assert _steady(pulp.json("worker", "show", "--href", worker["pulp_href"])) == _steady(worker)
    listed = pulp.json("worker", "list", "--name-contains", worker["name"][1:4], "--online")
    assert [_steady(row) for row in listed] == [_steady(worker)]
    assert pulp.json("worker", "list", "--missing") == []

    user = unique("someone")
    pulp_sync(stack.env, "createuser", user, "--password", PASSWORD)
    someone = configured(stack, tmp_path, user)
    assert [u["username"] for u in someone.json("user", "list")] == [user], "anyone else sees only themselves"
    names = [u["username"] for u in pulp.json("user", "list", "--limit", "1000")]
    assert {"tester", user} <= set(names) and names == sorted(names)
    shown = pulp.json("user", "show", "--username", user)
    assert (shown["is_staff"], shown["is_active"], shown["groups"]) == (False, True, [])
    refused = someone("user", "destroy", "--username", user)
    assert refused.returncode == 1 and "users_delete is not authorized" in refused.stderr, refused.stderr
    made = pulp("user", "create", "--username", unique("new"), "--password", PASSWORD)
    assert made.returncode == 1 and "made and changed on the server's command line" in made.stderr, made.stderr
    assert pulp("user", "destroy", "--username", user).returncode == 0
    assert user not in [u["username"] for u in pulp.json("user", "list", "--limit", "1000")]
    assert someone("user", "list").returncode == 1, "deleted: they cannot sign in"


def test_versions_content_and_orphans_on_mariadb(tmp_path: Path, server: str) -> None:
    """The dialect's queries that differ most between engines (what a version removed, deleting
    orphans through joins) on MariaDB, the pickiest of them; sqlite in the tests above."""
    with running_api("mysql", tmp_path) as stack:
        pulp = configured(stack, tmp_path / "pulp-cli-home")
        for name in ("good", "subset"):
            pulp.json("file", "remote", "create", "--name", name, "--url", f"{server}{name}/PULP_MANIFEST")
        pulp.json("file", "repository", "create", "--name", "repo", "--remote", "good")
        assert pulp("file", "repository", "sync", "--name", "repo").returncode == 0
        assert pulp("file", "repository", "sync", "--name", "repo", "--remote", "subset").returncode == 0
        second, _ = pulp.json("file", "repository", "version", "list", "--repository", "repo")
        summary = second["content_summary"]
        assert (summary["added"], summary["removed"]["file.file"]["count"]) == ({}, 8)
        removed = pulp.json("file", "content", "list", "--repository-version-removed", second["pulp_href"])
        assert len(removed) == 8
        subset = pulp.json("file", "remote", "show", "--name", "subset")["pulp_href"]
        reading = pulp.json("task", "list", "--shared-resource-in", subset)
        assert [task["created_resources"] for task in reading] == [[second["pulp_href"]]]

        assert pulp("file", "repository", "destroy", "--name", "repo").returncode == 0
        task = pulp.json("orphan", "cleanup")
        assert task["result"] == {"content_removed": 12, "artifacts_removed": 11}, "twelve lines, one body twice"


def _steady(worker: dict[str, Any]) -> dict[str, Any]:
    """A worker's row without its heartbeat, which moves on between two calls on a busy machine."""
    return {key: value for key, value in worker.items() if key != "last_heartbeat"}


def _wait_until(condition: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
