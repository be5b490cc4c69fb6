"""A split sync as an RQ task: its shards' processes forked by the worker's process that runs the task,
under both worker models, and ended with the task when it is canceled."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis
from rq.job import Job

from fixtures.server import serve_in_background
from pulp_sync.models import Remote, Repository, TaskState
from pulp_sync.store import artifact_store
from pulp_sync.tasks import cancel_task, dispatch_sync
from tests.pulp_sync.conftest import write_repository
from tests.pulp_sync.test_shards import children_of, gone
from tests.pulp_sync.test_sync import assert_store_is_sound
from tests.pulp_sync.test_tasks import (  # noqa: F401 - fixtures, used by name
    Workers,
    finished,
    queue,
    redis,
    workers,
)

FILES = 240


@pytest.fixture(scope="module")
def remote_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("remote")
    write_repository(root / "repo", {f"d{n % 5}/f{n}.txt": b"file %d\n" % n for n in range(FILES)})
    with serve_in_background(root) as server:
        yield f"{server.url}/repo/PULP_MANIFEST"


def split_source(url: str, **settings: object) -> tuple[Repository, Remote]:
    remote = Remote.objects.create(name="repo", url=url, downloader="futures", download_processes=3, **settings)
    return Repository.objects.create(name="repo"), remote


@pytest.mark.slow
@pytest.mark.parametrize("worker_class", ["fork", "simple"])
def test_a_split_sync_runs_on_an_rq_worker(db: Path, remote_url: str, workers: Workers, worker_class: str) -> None:
    workers.start(worker_class)
    task = finished(dispatch_sync(*split_source(remote_url), tasking="rq"), workers)
    assert task.state == TaskState.COMPLETED, task.error + workers.output()
    assert task.report is not None and (task.report["processes"], task.report["artifacts_downloaded"]) == (3, FILES)
    assert (task.artifacts_done, task.artifacts_total) == (FILES, FILES), "the shards' progress, summed"
    assert task.bytes_done == task.bytes_total == task.report["bytes_downloaded"]
    assert task.created_version is not None and task.created_version.number == 1
    assert_store_is_sound()


@pytest.mark.slow
@pytest.mark.parametrize("worker_class", ["fork", "simple"])
def test_canceling_a_split_sync_ends_every_shard(
    db: Path, remote_url: str, workers: Workers, redis: Redis, worker_class: str  # noqa: F811
) -> None:
    workers.start(worker_class)
    task = dispatch_sync(*split_source(remote_url, rate_limit=20), tasking="rq")  # ~4 s a shard
    deadline = time.monotonic() + 60
    while not task.artifacts_done:
        assert time.monotonic() < deadline and not task.is_finished, task.error + workers.output()
        time.sleep(0.05)
        task.refresh_from_db()
    runner = int(Job.fetch(task.job_id, connection=redis).meta["process"].rpartition(":")[2])
    shards = children_of(runner)
    assert len(shards) == 3, shards

    cancel_task(task.pk)
    task = finished(task, workers)
    assert task.state == TaskState.CANCELED, task.error
    deadline = time.monotonic() + 30
    while not all(map(gone, shards)):
        assert time.monotonic() < deadline, "a shard outlived its canceled task"
        time.sleep(0.05)
    assert list(artifact_store().temp_dir.iterdir()) == [], "the shards' workspaces are removed"
    assert task.created_version is None
    assert_store_is_sound()
