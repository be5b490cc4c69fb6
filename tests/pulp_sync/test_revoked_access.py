"""Revoked access ends: a user who lost their role on another user's remote cannot sync from it any
more, neither as the repository's own remote (checked when the sync is dispatched) nor by a task
dispatched before the role was removed (checked again when a real worker starts it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from fixtures.server import RunningServer, serve_in_background
from pulp_sync.models import Task, TaskState
from tests.pulp_sync.test_api_users import VIEWER, alice, bob  # noqa: F401 - fixtures, used by name
from tests.pulp_sync.test_pulp_api import call, created
from tests.pulp_sync.test_tasks import Workers, finished, queue, redis, workers  # noqa: F401 - fixtures

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
