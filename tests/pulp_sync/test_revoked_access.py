"""Revoked access ends: a user who lost their role on another user's remote cannot sync from it any
more, neither as the repository's own remote (checked when the sync is dispatched) nor by a task
dispatched before the role was removed (checked again when a real worker starts it), nor once they are
deleted; a co-owner who lost their role on a repository no longer serves it through the distribution
they made of it, which its owner sees and deletes; deleting a user cancels their waiting tasks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from redis import Redis
from rest_framework.test import APIClient
from rq import Queue

from fixtures.server import RunningServer, serve_in_background
from pulp_sync.content.serving import distribution_at
from pulp_sync.models import Task, TaskState
from pulp_sync.permissions import may_serve
from tests.pulp_sync.cli.test_remote_options import invoke
from tests.pulp_sync.tasking.test_tasks import Workers, finished, queue, redis, workers  # noqa: F401 - fixtures
from tests.pulp_sync.test_api_users import VIEWER, alice, bob  # noqa: F401 - fixtures, used by name
from tests.pulp_sync.test_pulp_api import call, created
from tests.pulp_sync.test_pulp_publishing import fetched, repository_with_versions, upload

OWNER = "file.filerepository_owner"
NOT_OWNED = ["You may distribute only the repositories you own: a distribution serves their content to anyone."]
REFUSED = {
    "remote": [
        "Not a remote you may use: you do not see it (any more). Name a remote you see, or set one on the repository."
    ]
}


@pytest.fixture
def counted(tree: Path) -> Iterator[RunningServer]:
    """A fixture server of its own, whose request counts say whether a sync reached it."""
    with serve_in_background(tree) as running:
        yield running


def her_remote_in_his_repository(alice: APIClient, bob: APIClient, url: str) -> tuple[dict[str, Any], str]:
    """Alice's remote (with her credentials), which Bob sees as a viewer and sets as his repository's
    remote; the remote and the href of Bob's repository's sync."""
    remote = created(alice, "remotes/file/file/", {"name": "hers", "url": url, "username": "a", "password": "secret"})
    given = call(alice, "POST", remote["pulp_href"] + "add_role/", {"role": VIEWER, "users": ["bob"]})
    assert given.status_code == 201, given.content
    mine = created(bob, "repositories/file/file/", {"name": "mine", "remote": remote["pulp_href"]})
    return remote, mine["pulp_href"] + "sync/"


def take_the_role(alice: APIClient, remote: dict[str, Any]) -> None:
    taken = call(alice, "POST", remote["pulp_href"] + "remove_role/", {"role": VIEWER, "users": ["bob"]})
    assert taken.status_code == 201, taken.content


@pytest.mark.usefixtures("queue")
def test_a_sync_from_a_default_remote_no_longer_seen_is_refused(
    alice: APIClient, bob: APIClient, counted: RunningServer
) -> None:
    remote, sync = her_remote_in_his_repository(alice, bob, counted.url + "good/PULP_MANIFEST")
    assert call(bob, "POST", sync, {}).status_code == 202, "while he sees her remote"

    take_the_role(alice, remote)
    refused = call(bob, "POST", sync, {})
    assert (refused.status_code, refused.json()) == (400, REFUSED)
    assert Task.objects.count() == 1, "the refused sync made no task"


def test_a_worker_refuses_a_sync_whose_dispatcher_lost_the_remote_meanwhile(
    alice: APIClient, bob: APIClient, counted: RunningServer, workers: Workers
) -> None:
    remote, sync = her_remote_in_his_repository(alice, bob, counted.url + "good/PULP_MANIFEST")
    assert call(bob, "POST", sync, {}).status_code == 202, "while he sees her remote; no worker runs yet"
    take_the_role(alice, remote)

    workers.start("simple")
    task = finished(Task.objects.get(), workers)
    assert task.state == TaskState.FAILED, task.error
    assert task.error == (
        "bob, who started it, may no longer use its remote (they do not see it): the sync was refused before it "
        "reached the remote"
    )
    assert counted.stats()["requests_total"] == 0, "nothing was sent to the remote, with her credentials or not"


def test_a_worker_refuses_a_sync_whose_dispatcher_was_deleted_meanwhile(
    alice: APIClient, bob: APIClient, counted: RunningServer, workers: Workers
) -> None:
    remote, sync = her_remote_in_his_repository(alice, bob, counted.url + "good/PULP_MANIFEST")
    assert call(bob, "POST", sync, {}).status_code == 202, "while he exists; no worker runs yet"
    User.objects.filter(username="bob").delete()  # as any deletion does: the task's dispatched_by is null
    assert Task.objects.get().dispatched_by is None

    workers.start("simple")
    task = finished(Task.objects.get(), workers)
    assert (task.state, task.error) == (
        TaskState.FAILED,
        "the user who started it no longer exists: the sync was refused before it reached the remote",
    )
    assert counted.stats()["requests_total"] == 0, "nothing was sent to the remote, with her credentials or not"


def test_deleteuser_cancels_the_users_waiting_tasks(
    alice: APIClient, bob: APIClient, counted: RunningServer, queue: str, redis: Redis
) -> None:
    remote, sync = her_remote_in_his_repository(alice, bob, counted.url + "good/PULP_MANIFEST")
    assert call(bob, "POST", sync, {}).status_code == 202, "no worker runs: it waits"
    task = Task.objects.get()
    assert Queue(queue, connection=redis).job_ids == [str(task.pk)]

    deleted = invoke("deleteuser", "bob")
    assert (deleted.exit_code, deleted.stderr) == (0, "Deleted user bob; canceled 1 waiting task\n")
    task.refresh_from_db()
    assert task.state == TaskState.CANCELED and Queue(queue, connection=redis).job_ids == []
    assert not User.objects.filter(username="bob").exists()
    assert call(alice, "GET", remote["pulp_href"]).status_code == 200, "what he saw is left as it was"

    unknown = invoke("deleteuser", "bob")
    assert (unknown.exit_code, unknown.stderr) == (2, "Error: no user named 'bob'\n")


def served(path: str) -> tuple[int, bytes]:
    """What anyone (no user) gets at /pulp/content/`path`: the status and the body."""
    answer = fetched(APIClient(), "/pulp/content/" + path)
    body = b"".join(answer.streaming_content) if answer.status_code == 200 and answer.streaming else answer.content
    return answer.status_code, body


@pytest.mark.parametrize("by", ["repository", "publication"])
def test_a_distribution_serves_only_while_its_owner_may_distribute_what_it_serves(
    alice: APIClient, bob: APIClient, by: str
) -> None:
    repository = repository_with_versions(alice)  # a.txt, then b/c.txt
    role = {"role": OWNER, "users": ["bob"]}
    assert call(alice, "POST", repository["pulp_href"] + "add_role/", role).status_code == 201

    def served_by(client: APIClient) -> str:
        """What a distribution of `client`'s serves her repository by: itself, or a publication of theirs."""
        if by == "repository":
            return str(repository["pulp_href"])
        return str(created(client, "publications/file/file/", {"repository": repository["pulp_href"]})["pulp_href"])

    his = created(bob, "distributions/file/file/", {"name": "his", "base_path": "his", by: served_by(bob)})
    created(alice, "distributions/file/file/", {"name": "hers", "base_path": "hers", by: served_by(alice)})
    assert served("his/a.txt") == served("hers/a.txt") == (200, b"alpha\n"), "while he owns her repository"
    found = distribution_at("his/a.txt")
    assert found is not None
    with CaptureQueriesContext(connection) as queries:
        assert may_serve(found[0])
    assert len(queries) == 1, "one query at each request, whatever the distribution serves"

    assert call(alice, "POST", repository["pulp_href"] + "remove_role/", role).status_code == 201
    assert upload(alice, "new.txt", b"new\n", repository["pulp_href"]).status_code == 201, "her version 3"
    for path in ("a.txt", "new.txt", "PULP_MANIFEST"):
        status, body = served("his/" + path)
        assert status == 404 and b"serves nothing" in body, "neither what it served nor her new version"
    assert served("hers/a.txt") == (200, b"alpha\n"), "hers serves on: she owns what it serves"
    changed = call(bob, "PATCH", his["pulp_href"], {"base_path": "moved"})
    assert (changed.status_code, changed.json()) == (400, {by: NOT_OWNED}), "nor may he change it but to end it"

    listed = call(alice, "GET", "distributions/file/file/?name=his").json()
    assert [found["pulp_href"] for found in listed["results"]] == [his["pulp_href"]], "she sees his"
    permissions = call(alice, "GET", his["pulp_href"] + "my_permissions/").json()["permissions"]
    assert "file.delete_filedistribution" in permissions
    assert call(alice, "PATCH", his["pulp_href"], {"base_path": "kept"}).status_code == 200, "and edits it"
    assert call(alice, "DELETE", his["pulp_href"]).status_code == 204, "and deletes it"
