"""A split sync as an RQ task (pulp_sync.sync.split.board): its shards taken by the queue's workers and by the
task's own process, a dead taker's shard taken again once, a cancel ending every shard."""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis import Redis

from fixtures.server import serve_in_background
from pulp_sync.content.store import artifact_store
from pulp_sync.models import Remote, Repository, Task, TaskState
from pulp_sync.sync.split.board import Board, _OwnTaker, _Watch
from pulp_sync.sync.split.jobs import TAKE_SHARDS
from pulp_sync.sync.split.planning import Shard, ShardCounts, ShardFailed
from pulp_sync.tasking.tasks import cancel_task, dispatch_sync
from tests.pulp_sync.conftest import write_repository
from tests.pulp_sync.sync.split.test_planning import gone
from tests.pulp_sync.sync.test_pipeline import assert_store_is_sound
from tests.pulp_sync.tasking.test_tasks import (  # noqa: F401 - fixtures, used by name
    Workers,
    finished,
    queue,
    redis,
    workers,
)

FILES = 240
SHARDS = 3


def one_shard(folder: Path) -> list[Shard]:
    return [Shard(0, folder / "shard-0.spool", 5, 50)]


@pytest.fixture(scope="module")
def remote_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("remote")
    write_repository(root / "repo", {f"d{n % 5}/f{n}.txt": b"file %d\n" % n for n in range(FILES)})
    with serve_in_background(root) as server:
        yield f"{server.url}/repo/PULP_MANIFEST"


def split_task(url: str, **settings: object) -> Task:
    remote = Remote.objects.create(name="repo", url=url, downloader="futures", download_processes=SHARDS, **settings)
    return dispatch_sync(Repository.objects.create(name="repo"), remote, tasking="rq")


def takers_while_running(task: Task, redis: Redis, workers: Workers,
                         until: Callable[[list[dict[str, str]]], bool]) -> list[dict[str, str]]:
    """The board's shards as the task's sync runs, once `until` holds for them."""
    board = Board(redis, str(task.pk))
    deadline = time.monotonic() + 60
    while not until(shards := board.shards(SHARDS)):
        task.refresh_from_db()
        assert time.monotonic() < deadline and not task.is_finished, task.error + workers.output()
        time.sleep(0.02)
    return shards


def all_running(shards: list[dict[str, str]]) -> bool:
    return all(fields.get("state") == "running" and int(fields.get("files_done", 0)) for fields in shards)


@pytest.mark.slow
@pytest.mark.parametrize("worker_class", ["fork", "simple"])
def test_with_no_other_worker_free_the_task_takes_every_shard_itself(
        db: Path, remote_url: str, workers: Workers, worker_class: str) -> None:
    """No deadlock: the task's own taker runs every shard when no worker takes the jobs it queued."""
    workers.start(worker_class)
    task = finished(split_task(remote_url), workers)
    assert task.state == TaskState.COMPLETED, task.error + workers.output()
    assert task.report is not None and (task.report["processes"], task.report["artifacts_downloaded"]) == (3, FILES)
    assert task.report["connections"] == 10, "the remote's default concurrency, its three processes together"
    assert (task.artifacts_done, task.artifacts_total) == (FILES, FILES), "the shards' progress, summed"
    assert task.bytes_done == task.bytes_total == task.report["bytes_downloaded"]
    assert task.shards is not None and [s["shard"] for s in task.shards] == [1, 2, 3], task.shards
    assert all(s["files_done"] == s["files"] and s["bytes_done"] == s["bytes"] for s in task.shards), task.shards
    assert sum(s["files"] for s in task.shards) == FILES
    assert task.created_version is not None and task.created_version.number == 1
    assert_store_is_sound()


@pytest.mark.slow
def test_shards_spread_over_the_workers_and_a_dead_takers_shard_is_taken_again(
        db: Path, remote_url: str, workers: Workers, redis: Redis) -> None:
    for _ in range(SHARDS):
        workers.start("fork")
    task = split_task(remote_url, rate_limit=60)  # 20 a second in each of three processes: about 4 s a shard
    shards = takers_while_running(task, redis, workers, all_running)
    processes = {fields["process"] for fields in shards}
    assert len(processes) == SHARDS, shards
    assert sum("(the task's own)" in fields["taker"] for fields in shards) == 1, shards
    victim = next(fields for fields in shards if "(the task's own)" not in fields["taker"])
    os.kill(int(victim["process"].rpartition(":")[2]), signal.SIGKILL)

    task = finished(task, workers)
    assert task.state == TaskState.COMPLETED, task.error + workers.output()
    assert (task.artifacts_done, task.report["artifacts_downloaded"]) == (FILES, FILES), task.report
    assert task.created_version is not None and task.created_version.number == 1
    assert list(artifact_store().temp_dir.iterdir()) == []
    assert_store_is_sound()


@pytest.mark.slow
@pytest.mark.parametrize("worker_class", ["fork", "simple"])
def test_canceling_a_split_sync_ends_every_shard(
        db: Path, remote_url: str, workers: Workers, redis: Redis, worker_class: str) -> None:
    for _ in range(SHARDS):
        workers.start(worker_class)
    task = split_task(remote_url, rate_limit=60)
    shards = takers_while_running(task, redis, workers, all_running)
    own = next(int(f["process"].rpartition(":")[2]) for f in shards if "(the task's own)" in f["taker"])

    cancel_task(task.pk)
    task = finished(task, workers)
    assert task.state == TaskState.CANCELED, task.error
    board = Board(redis, str(task.pk))
    deadline = time.monotonic() + 30
    while not (gone(own) and all(fields.get("state") != "running" for fields in board.shards(SHARDS))):
        assert time.monotonic() < deadline, ("a shard outlived its canceled task", board.shards(SHARDS))
        time.sleep(0.05)
    assert board.meta() == {}, "the board is removed"
    deadline = time.monotonic() + 30
    while list(artifact_store().temp_dir.iterdir()):
        assert time.monotonic() < deadline, list(artifact_store().temp_dir.iterdir())
        time.sleep(0.05)
    assert task.created_version is None
    assert_store_is_sound(interrupted=True)


@pytest.fixture
def board(redis: Redis, tmp_path: Path) -> Iterator[Board]:
    made = Board(redis, f"test-{uuid.uuid4().hex[:12]}")
    queue = f"pulp-sync-test-{uuid.uuid4().hex[:12]}"
    made.create(one_shard(tmp_path), 1, "sync-x", queue, TAKE_SHARDS)
    try:
        yield made
    finally:
        made.delete(1)
        redis.delete(f"rq:queue:{queue}")


def a_dead_taker_took(board: Board) -> dict[str, str]:
    board.connection.lpop(board.key("waiting"))
    board.connection.hset(board.key("shard", 0), mapping={"state": "running", "taker": "w1.7.ab",
                                                          "process": "elsewhere:4242"})
    return board.shard(0)


def watch(board: Board, tmp_path: Path) -> _Watch:
    return _Watch(board, one_shard(tmp_path), "sync-x", lambda index, files, size: None,
                  lambda taker, process: False, _OwnTaker(board, never, "t"))


def never(shard: Shard, prefix: str, progress: object) -> ShardCounts:
    raise AssertionError("not run in this test")


def test_a_shard_whose_taker_died_waits_again_once_then_fails_the_sync(board: Board, tmp_path: Path) -> None:
    watching = watch(board, tmp_path)
    watching._follow(0, a_dead_taker_took(board))
    assert board.shard(0)["state"] == "waiting" and board.shard(0)["attempts"] == "2" and board.waiting() == 1
    with pytest.raises(ShardFailed, match=r"^shard 1 of 1 \(process 4242\) failed: its taker w1\.7\.ab "
                                          r"\(elsewhere:4242\) stopped, on attempt 2$"):
        watching._follow(0, a_dead_taker_took(board))
