"""A split sync's shards on the installation's RQ workers, on any host: the board they are taken from.

When a sync runs as an RQ task, its shards (pulp_sync.sync.split.planning) are put on a board in Redis, one hash
per shard under `pulp-sync:split:<task>`, with a list of the shards waiting. Whoever takes a shard
claims it (one Lua script: it leaves the list and names its taker in the same step), downloads it with
the remote's downloader, writes its progress to its hash a few times a second, and marks it done or
failed. The takers are RQ jobs (pulp_sync.sync.split.jobs), one per shard but the first, on the task's
queue, so that idle workers on any host take them; and one process the task forks on its own host,
which takes shards until none is left.

Why a board of our own rather than RQ's job dependencies: the version must be built by the process
that holds the repository's lock, and a task that waited for jobs no free worker takes would
deadlock a busy pool (W tasks on W workers, each waiting for shards nobody runs). Here the task's own
taker guarantees progress: with no worker free, it takes every shard itself, one after the other.

The task's process watches the board, and is the one owner of every decision: it sums the shards'
progress into the task's; a shard whose taker died (its process gone on this host, its worker's
heartbeat lapsed on another) is put back on the list once, with its attempt counted, and a second
death fails the sync saying which worker stopped; the first failure, or a cancel, cancels the board:
the takers stop at their next progress write, the task's own is sent SIGTERM, and forking workers'
work horses running a shard are stopped by RQ.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from redis import Redis
from rq import Queue
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError

from pulp_base.process_names import process_alive, this_process
from pulp_sync import defaults
from pulp_sync.sync.children import fork_child, terminate
from pulp_sync.sync.split.forked import BatchedProgress, Progress, Runner, Work, remove_workspaces
from pulp_sync.sync.split.planning import Shard, ShardCounts, ShardFailed, ShardStopped, shard_prefix

__all__ = ["Board", "BoardCanceled", "BoardProgress", "on_workers", "take_shards", "alive_here_or_beating", "abandon"]

_CLAIM = """
local index = redis.call('LPOP', KEYS[1])
if index then
  redis.call('HSET', KEYS[2] .. index, 'state', 'running', 'taker', ARGV[1], 'process', ARGV[2], 'job', ARGV[3],
             'files_done', 0, 'bytes_done', 0)
end
return index
"""
"""Take the first waiting shard and name its taker in one step: a taker that dies between the two
could otherwise leave a shard neither waiting nor taken."""

class BoardCanceled(Exception):
    """The board was canceled (a shard failed, or the task was canceled) or is gone: its takers stop."""


@dataclass(frozen=True)
class Board:
    """One split sync's shards in Redis (see the module)."""

    connection: Redis
    task_id: str

    def key(self, *parts: object) -> str:
        return ":".join(["pulp-sync:split", self.task_id, *map(str, parts)])

    def create(self, shards: Sequence[Shard], remote_id: int, prefix: str, queue: str, job: str) -> None:
        """Put the shards on the board, every one waiting; the queue its takers' jobs go on, and the RQ job
        they run (a dotted path: see on_workers)."""
        with self.connection.pipeline() as pipe:
            pipe.hset(self.key("meta"), mapping={"remote": remote_id, "prefix": prefix, "count": len(shards),
                                                 "queue": queue, "job": job})
            for shard in shards:
                pipe.hset(self.key("shard", shard.index), mapping={
                    "spool": str(shard.spool), "files": shard.files, "bytes": shard.bytes, "state": "waiting",
                    "attempts": 1, "files_done": 0, "bytes_done": 0})
                pipe.rpush(self.key("waiting"), shard.index)
            for name in ["meta", "waiting", *(f"shard:{shard.index}" for shard in shards)]:
                pipe.expire(self.key(name), defaults.JOB_RECORD_SECONDS)
            pipe.execute()

    def meta(self) -> dict[str, str]:
        """The remote's key, the workspaces' prefix, the count, the queue and the job; empty once the board
        is deleted."""
        return _decoded(self.connection.hgetall(self.key("meta")))

    def claim(self, taker: str, job: str) -> Shard | None:
        """The next waiting shard, now this taker's (its process and job recorded); None when none waits."""
        index = self.connection.eval(_CLAIM, 2, self.key("waiting"), self.key("shard", ""), taker, this_process(),
                                     job)
        if index is None:
            return None
        fields = self.shard(int(index))
        return Shard(int(index), Path(fields["spool"]), int(fields["files"]), int(fields["bytes"]))

    def shard(self, index: int) -> dict[str, str]:
        return _decoded(self.connection.hgetall(self.key("shard", index)))

    def shards(self, count: int) -> list[dict[str, str]]:
        with self.connection.pipeline() as pipe:
            for index in range(count):
                pipe.hgetall(self.key("shard", index))
            return [_decoded(fields) for fields in pipe.execute()]

    def advance(self, index: int, files: int, size: int) -> None:
        """Add a taker's progress; BoardCanceled if the board was canceled or is gone."""
        with self.connection.pipeline() as pipe:
            pipe.hincrby(self.key("shard", index), "files_done", files)
            pipe.hincrby(self.key("shard", index), "bytes_done", size)
            pipe.exists(self.key("canceled"))
            pipe.exists(self.key("meta"))
            *_, canceled, exists = pipe.execute()
        if canceled or not exists:
            raise BoardCanceled(f"the split sync of task {self.task_id} was canceled")

    def end(self, index: int, state: str, counts: ShardCounts, message: str = "") -> None:
        """Mark a shard done or failed, with what its taker reports."""
        self.connection.hset(self.key("shard", index), mapping={
            "state": state, "counts": json.dumps(counts.as_dict()), "message": message})

    def put_back(self, index: int) -> None:
        """A shard whose taker died waits again, its attempt counted and its progress undone."""
        with self.connection.pipeline() as pipe:
            pipe.hset(self.key("shard", index), mapping={"state": "waiting", "files_done": 0, "bytes_done": 0})
            pipe.hincrby(self.key("shard", index), "attempts", 1)
            pipe.rpush(self.key("waiting"), index)
            pipe.execute()

    def waiting(self) -> int:
        return int(self.connection.llen(self.key("waiting")))

    def cancel(self) -> None:
        self.connection.set(self.key("canceled"), 1, ex=defaults.JOB_RECORD_SECONDS)

    def canceled(self) -> bool:
        return bool(self.connection.exists(self.key("canceled"))) or not self.connection.exists(self.key("meta"))

    def delete(self, count: int) -> None:
        self.connection.delete(self.key("meta"), self.key("waiting"), self.key("canceled"),
                               *(self.key("shard", index) for index in range(count)))


def _decoded(fields: Mapping[bytes | str, bytes | str]) -> dict[str, str]:
    return {_text(key): _text(value) for key, value in fields.items()}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class BoardProgress(BatchedProgress):
    """A taker's progress: added to its shard's hash on the board, each time checking that the board still
    stands (BoardCanceled otherwise)."""

    def __init__(self, board: Board, index: int) -> None:
        super().__init__()
        self._board, self._index = board, index

    def report(self, files: int, size: int) -> None:
        self._board.advance(self._index, files, size)


def take_shards(board: Board, work: Work, taker: str, job: str = "") -> None:
    """Take shards from the board and run them until none waits, the board is canceled, or one fails."""
    prefix = board.meta().get("prefix", "")
    while not board.canceled() and (shard := board.claim(taker, job)) is not None:
        if not _run_one(board, shard, work, shard_prefix(prefix, shard.index)):
            return


def _run_one(board: Board, shard: Shard, work: Work, workspace_prefix: str) -> bool:
    """Run one shard and mark how it ended; whether the taker should go on."""
    try:
        counts = work(shard, workspace_prefix, BoardProgress(board, shard.index))
    except BoardCanceled:
        return False
    except ShardStopped as stopped:
        board.end(shard.index, "failed", stopped.counts, str(stopped))
        return False
    except Exception as error:  # noqa: BLE001 - the task's process fails the sync with it
        board.end(shard.index, "failed", ShardCounts(), f"{type(error).__name__}: {error}")
        return False
    board.end(shard.index, "done", counts)
    return True


Alive = Callable[[str, str], bool]
"""Whether a taker lives, given its worker's name and its process (host:pid)."""


def on_workers(connection: Redis, queue: str, job: str, task_id: str, remote_id: int, taker: str,
               alive: Alive) -> Runner:
    """A Runner for a sync that runs as the RQ task `task_id` on the worker `taker`: its shards on the board,
    taken by RQ jobs on `queue` and by a process of the task's own; `alive` tells a dead taker.

    `job` is the dotted path of the RQ job the takers run (pulp_sync.sync.split.jobs.TAKE_SHARDS), named by the
    caller: that job needs this module, so naming it here would close an import loop."""

    def run(shards: Sequence[Shard], prefix: str, work: Work, started: Callable[[], None],
            progress: Progress) -> list[ShardCounts]:
        board = Board(connection, task_id)
        board.create(shards, remote_id, prefix, queue, job)
        with _takers(board, shards, prefix, work, taker) as own:
            started()
            return _Watch(board, shards, prefix, progress, alive, own).until_done()

    return run


@dataclass
class _OwnTaker:
    """The task's own taking process, forked again whenever shards wait and it has ended."""

    board: Board
    work: Work
    taker: str
    pid: int | None = None
    watch: int | None = None
    """The pipe whose end stops it (children.fork_child)."""

    def ensure(self) -> None:
        if self.pid is not None and os.waitpid(self.pid, os.WNOHANG) != (0, 0):
            self._forget()
        if self.pid is None and self.board.waiting():
            self.pid, self.watch = fork_child(self._take, defaults.SHARD_STOP_SECONDS)

    def _forget(self) -> None:
        if self.watch is not None:
            os.close(self.watch)
        self.pid = self.watch = None

    def _take(self) -> int:
        take_shards(self.board, self.work, self.taker)
        return 0

    def stop(self) -> None:
        if self.pid is not None:
            terminate(self.pid, defaults.SHARD_STOP_SECONDS)
        self._forget()


@contextmanager
def _takers(board: Board, shards: Sequence[Shard], prefix: str, work: Work, taker: str) -> Iterator[_OwnTaker]:
    """One RQ job per shard but the first, and the task's own taker; on leaving, the board canceled (a
    no-op for a board whose shards are all done), its takers stopped, its workspaces removed, the board
    deleted."""
    for _ in shards[1:]:
        _enqueue(board)
    own = _OwnTaker(board, work, f"{taker} (the task's own)")
    own.ensure()
    try:
        yield own
    finally:
        own.stop()
        abandon(board)
        remove_workspaces(prefix, shards)


def abandon(board: Board) -> None:
    """End a board: canceled (its takers stop at their next progress write), the forking workers' horses
    running its shards stopped, its keys deleted. What the task's process does when its sync ends, and
    whoever ends a task whose process died or was stopped (ending.abandon_task, ending.finish_cancel)."""
    count = int(board.meta().get("count", 0))
    board.cancel()
    _stop_running_jobs(board, count)
    board.delete(count)


def _enqueue(board: Board) -> None:
    """One more taker job on the board's queue."""
    meta = board.meta()
    queue = Queue(meta["queue"], connection=board.connection)
    queue.enqueue(meta["job"], board.task_id, job_timeout=defaults.JOB_TIMEOUT,
                  result_ttl=defaults.JOB_RECORD_SECONDS, failure_ttl=defaults.JOB_RECORD_SECONDS)


def _stop_running_jobs(board: Board, count: int) -> None:
    """Ask forking workers to stop the work horses still running a shard (a SimpleWorker's taker stops at
    its next progress write, when it finds the board canceled)."""
    for fields in board.shards(count):
        if fields.get("state") == "running" and fields.get("job"):
            try:
                send_stop_job_command(board.connection, fields["job"])
            except (NoSuchJobError, InvalidJobOperation):
                pass


@dataclass
class _Watch:
    """The task's view of its board: progress summed, dead takers' shards put back once, the first
    failure raised (module docstring)."""

    board: Board
    shards: Sequence[Shard]
    prefix: str
    """The sync's workspace prefix, which names its shards' workspaces (shards.shard_prefix)."""
    progress: Progress
    alive: Alive
    own: _OwnTaker
    seen: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.shards)

    def until_done(self) -> list[ShardCounts]:
        while True:
            self.progress(None, 0, 0)
            shards = self.board.shards(self.count)
            for index, fields in enumerate(shards):
                self._follow(index, fields)
            if all(fields.get("state") == "done" for fields in shards):
                return [ShardCounts(**json.loads(fields["counts"])) for fields in shards]
            self.own.ensure()
            time.sleep(defaults.SHARD_POLL_SECONDS)

    def _follow(self, index: int, fields: dict[str, str]) -> None:
        files, size = int(fields.get("files_done", 0)), int(fields.get("bytes_done", 0))
        before = self.seen.get(index, (0, 0))
        if (files, size) != before:
            self.progress(index, files - before[0], size - before[1])
            self.seen[index] = (files, size)
        state = fields.get("state")
        if state == "failed":
            counts = ShardCounts(**json.loads(fields["counts"]))
            raise ShardFailed(index, self.count, _pid(fields), fields["message"], counts)
        if state == "running" and not self.alive(fields["taker"], fields["process"]):
            self._taker_died(index, fields)

    def _taker_died(self, index: int, fields: dict[str, str]) -> None:
        why = f"its taker {fields['taker']} ({fields['process']}) stopped"
        if int(fields["attempts"]) >= defaults.SHARD_ATTEMPTS:
            raise ShardFailed(index, self.count, _pid(fields), f"{why}, on attempt {fields['attempts']}", None)
        remove_workspaces(self.prefix, [self.shards[index]])
        self.board.put_back(index)
        _enqueue(self.board)


def _pid(fields: dict[str, str]) -> int:
    return int(fields.get("process", ":0").rpartition(":")[2] or 0)


def alive_here_or_beating(heartbeat: Callable[[str], bool]) -> Alive:
    """A taker lives if its process does (on this host) or, on another host, its worker's heartbeat does."""

    def alive(taker: str, process: str) -> bool:
        here = process_alive(process)
        return here if here is not None else heartbeat(taker)

    return alive

