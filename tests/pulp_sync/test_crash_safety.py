"""Crash safety: SIGKILL a sync at random moments, fill its disk, and the store still agrees with the database.

After every kill, `verify` finds nothing wrong but what the dead sync left in its temp dir (no
orphan, no missing or damaged artifact, no half-made version), `verify --repair` removes only
that, and a re-sync completes. The kills land at random moments of a sync paced to last about a
second; the seed is printed, so a failing run can be replayed with PULP_SYNC_CRASH_SEED.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings
from redis import Redis
from rq.job import Job

from fixtures import NetworkProfile
from fixtures.server import serve_in_background
from pulp_base.manifest import parse_manifest
from pulp_sync.content.store import artifact_store
from pulp_sync.content.verify import Verification, verify_store
from pulp_sync.models import Artifact, FileContent, Remote, Repository, RepositoryVersion, Task, TaskState
from pulp_sync.sync.pipeline import SyncError, sync_repository
from pulp_sync.tasking.reaping import reap_abandoned_tasks
from pulp_sync.tasking.tasks import dispatch_sync, wait_for
from tests.pulp_sync.conftest import write_repository
from tests.pulp_sync.tasking.test_tasks import FINISH_SECONDS, Workers, queue, redis, workers  # noqa: F401 - fixtures
from tests.pulp_sync.test_cli import PULP_SYNC

KILLS = 20
"""SIGKILLs of each kind of process: the inline CLI, and the RQ worker (10 forking, 10 simple)."""
PACED = NetworkProfile(per_connection_bps=400_000, name="about-a-second")
"""24 files of 48 kB, 4 at a time at 400 kB/s each: about 0.7 s of downloads, then the version."""
SEED = int(os.environ.get("PULP_SYNC_CRASH_SEED") or random.randrange(2**32))


@pytest.fixture(scope="module")
def crash_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("crash-tree")
    rng = random.Random(11)
    write_repository(root / "repo", {f"f{n:02d}.bin": rng.randbytes(48_000) for n in range(24)})
    write_repository(root / "big", {"big.bin": rng.randbytes(60_000)})
    write_repository(root / "many", {f"m{n:02d}.bin": rng.randbytes(20_000) for n in range(12)})
    return root


@pytest.fixture(scope="module")
def paced_server(crash_tree: Path) -> Iterator[str]:
    with serve_in_background(crash_tree, PACED) as running:
        yield running.url


@pytest.fixture(scope="module")
def fast_server(crash_tree: Path) -> Iterator[str]:
    with serve_in_background(crash_tree) as running:
        yield running.url


def expected_content(tree: Path) -> set[tuple[str, str]]:
    return {(e.relative_path, e.sha256) for e in parse_manifest(tree / "repo" / "PULP_MANIFEST")}


def assert_only_temp_files(found: Verification, tree: Path) -> None:
    """What a killed sync may leave: temp files, rows marked missing; no orphan, loss, damage or half version."""
    assert (found.missing, found.corrupt, found.orphans, found.incomplete_versions) == ([], [], [], []), found
    for version in RepositoryVersion.objects.all():
        content = set(version.content.values_list("relative_path", "artifact__sha256"))
        assert content == expected_content(tree), f"half-made {version}"


def verify_after_kill(tree: Path) -> int:
    """verify, then verify --repair (which may only remove temp files), then verify clean; the temp files."""
    store = artifact_store()
    found = verify_store(store)
    assert_only_temp_files(found, tree)
    repaired = verify_store(store, repair=True)
    assert_only_temp_files(repaired, tree)
    assert repaired.temp_files == found.temp_files and repaired.problems() == 0
    assert verify_store(store).problems() == 0
    return len(found.temp_files)


def assert_resynced(repository: Repository, tree: Path) -> None:
    latest = repository.latest_version()
    assert latest is not None, "the re-sync made the version"
    assert set(latest.content.values_list("relative_path", "artifact__sha256")) == expected_content(tree)
    assert verify_store(artifact_store()).problems() == 0


def forget_everything() -> None:
    """Empty the database's sync records and the store, without dropping the schema a live worker uses."""
    Task.objects.all().delete()
    Repository.objects.all().delete()
    Remote.objects.all().delete()
    FileContent.objects.all().delete()
    Artifact.objects.all().delete()
    shutil.rmtree(artifact_store().root, ignore_errors=True)


def workspace_of(pid: int) -> Path | None:
    found = list(artifact_store().temp_dir.glob(f"*@*:{pid}"))
    return found[0] if found else None


def test_sigkill_of_the_inline_sync(db: Path, paced_server: str, fast_server: str, crash_tree: Path) -> None:
    rng = random.Random(SEED)
    outcomes: Counter[str] = Counter()
    env = {**os.environ}
    for run in range(KILLS):
        engine = ("asyncio", "futures")[run % 2]
        command = [str(PULP_SYNC), "sync", paced_server + "repo/PULP_MANIFEST", "--repository", "repo"]
        child = subprocess.Popen(
            [*command, "--downloader", engine, "--concurrency", "4"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while workspace_of(child.pid) is None and child.poll() is None:
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 1.0))
        outcomes["killed mid-sync" if child.poll() is None else "finished before the kill"] += 1
        child.send_signal(signal.SIGKILL)
        child.wait()
        outcomes["left temp files"] += verify_after_kill(crash_tree) > 0
        outcomes["left artifacts marked missing"] += Artifact.objects.filter(missing=True).exists()

        repository = Repository.objects.get(name="repo")
        remote = Remote.objects.create(name=f"fast-{run}", url=fast_server + "repo/PULP_MANIFEST", downloader=engine)
        sync_repository(remote, repository)
        assert_resynced(repository, crash_tree)
        forget_everything()
    print(f"\ninline SIGKILL x{KILLS} (seed {SEED}): {dict(outcomes)}")
    assert outcomes["killed mid-sync"], "some kill landed before the sync was over"


@pytest.mark.parametrize("worker_class", ["fork", "simple"])
def test_sigkill_of_the_rq_worker(
    db: Path,
    paced_server: str,
    fast_server: str,
    crash_tree: Path,
    workers: Workers,
    redis: Redis,
    worker_class: str,
) -> None:
    """The forking worker's work horse, or the SimpleWorker itself, killed mid-task, KILLS / 2 times each."""
    rng = random.Random(SEED + (worker_class == "simple"))
    outcomes: Counter[str] = Counter()
    worker = workers.start(worker_class)
    for run in range(KILLS // 2):
        engine = ("asyncio", "futures")[run % 2]
        repository = Repository.objects.create(name="repo")
        slow = Remote.objects.create(
            name="slow", url=paced_server + "repo/PULP_MANIFEST", downloader=engine, download_concurrency=4
        )
        task = dispatch_sync(repository, slow, tasking="rq")
        while task.state == TaskState.WAITING:
            assert worker.poll() is None, workers.output()
            time.sleep(0.005)
            task.refresh_from_db()
        time.sleep(rng.uniform(0.0, 1.0))
        process = int(Job.fetch(task.job_id, connection=redis).meta["process"].rpartition(":")[2])
        task.refresh_from_db()
        outcomes["killed mid-sync" if not task.is_finished else "finished before the kill"] += 1
        with contextlib.suppress(ProcessLookupError):  # a work horse that finished its task is gone
            os.kill(process, signal.SIGKILL)
        if worker_class == "simple":
            worker.wait(timeout=FINISH_SECONDS)
            reap_abandoned_tasks()
            worker = workers.start(worker_class)
        task = wait_for(task, timeout=FINISH_SECONDS)
        assert task.state in (TaskState.COMPLETED, TaskState.FAILED), task.state
        if task.state == TaskState.FAILED:
            assert "the sync was abandoned: sync again to finish it" in task.error, task.error
        outcomes["left temp files"] += verify_after_kill(crash_tree) > 0

        fast = Remote.objects.create(name="fast", url=fast_server + "repo/PULP_MANIFEST", downloader=engine)
        again = wait_for(dispatch_sync(repository, fast, tasking="rq"), timeout=FINISH_SECONDS)
        assert again.state == TaskState.COMPLETED, again.error + workers.output()
        assert_resynced(repository, crash_tree)
        forget_everything()
    print(f"\nRQ {worker_class} SIGKILL x{KILLS // 2} (seed {SEED}): {dict(outcomes)}")
    assert outcomes["killed mid-sync"], "some kill landed before the sync was over"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs as the artifact store, mounted by the test (as root); skipped if mounting is impossible."""
    mountpoint = tmp_path / "small-disk"
    mountpoint.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mountpoint)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs for the disk-full test: {mounted.stderr.strip()}")
    try:
        with override_settings(PULP_SYNC_ARTIFACTS=mountpoint):
            yield mountpoint
    finally:
        _unmount(mountpoint)


def _unmount(mountpoint: Path, patience: float = 5.0) -> None:
    """Unmount, waiting out a moment's "target is busy"; a hold that lasts is an error naming the holders
    (in CI once: a failed sync's spool, kept open by its traceback until the garbage collector ran)."""
    deadline = time.monotonic() + patience
    while (done := subprocess.run(["umount", str(mountpoint)], capture_output=True, text=True)).returncode:
        if time.monotonic() > deadline:
            fuser = shutil.which("fuser")
            holders = subprocess.run([fuser, "-vm", str(mountpoint)], capture_output=True, text=True) if fuser else None
            held_by = (holders.stderr or holders.stdout).strip() if holders else "(fuser, of psmisc, would say)"
            raise AssertionError(f"{done.stderr.strip()}; held by: {held_by}")
        time.sleep(0.1)


def _open_files_under(folder: Path) -> list[str]:
    """This process's open files under `folder` (a deleted one too): what would keep its mount busy."""
    found = []
    for link in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a descriptor another thread closed meanwhile
            if (target := os.readlink(link)).startswith(f"{folder}/"):
                found.append(target)
    return sorted(found)


@pytest.mark.parametrize("engine", ["asyncio", "futures"])
@pytest.mark.parametrize("repository", ["big", "many"])
def test_a_full_disk_fails_clearly_and_leaves_no_partial_artifact(
    db: Path, fast_server: str, crash_tree: Path, small_disk: Path, engine: str, repository: str
) -> None:
    """big: one file a little larger than the free space; many: files that fill it part way through."""
    remote = Remote.objects.create(name="r", url=fast_server + f"{repository}/PULP_MANIFEST", downloader=engine,
                                   download_concurrency=2)  # so that "many" fails with some lines unread
    with pytest.raises(SyncError) as caught:
        sync_repository(remote, Repository.objects.create(name=repository))
    message = str(caught.value)
    assert "No space left on device" in message and f"'{repository}' is unchanged" in message, message
    assert _open_files_under(small_disk) == [], "the failed sync closed what it opened in the store, while its "\
        "traceback (held by `caught`) is still alive"
    assert not RepositoryVersion.objects.exists()
    store = artifact_store()
    assert store.root == small_disk and list(store.temp_dir.iterdir()) == []
    found = verify_store(store)
    assert found.problems() == 0, found
    kept = set(Artifact.objects.filter(missing=False).values_list("sha256", flat=True))
    assert {digest for _, digest in store.stored_files()} == kept, "every file stored is recorded, and no more"
    sizes = {e.sha256: e.size for e in parse_manifest(crash_tree / repository / "PULP_MANIFEST")}
    assert all(store.path_for(digest).stat().st_size == sizes[digest] for digest in kept), "no partial artifact"


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_the_inline_sync_cleanly(db: Path, paced_server: str, signum: int, status: int) -> None:
    url = paced_server + "repo/PULP_MANIFEST"
    command = [str(PULP_SYNC), "sync", url, "--repository", "repo", "--concurrency", "1"]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while workspace_of(child.pid) is None and child.poll() is None:
        time.sleep(0.005)
    workspace = workspace_of(child.pid)
    time.sleep(0.5)  # of about 3 s of downloads, one at a time: some done, one in flight
    assert child.poll() is None, "the sync was still running when signalled"
    child.send_signal(signum)
    _, stderr = child.communicate(timeout=30)

    assert child.returncode == status, stderr
    assert stderr.endswith(f"Error: stopped by {signal.Signals(signum).name}; 'repo', made for this sync, is not "
                           "kept, and the artifacts downloaded so far are kept, so syncing again resumes\n"), stderr
    assert workspace is not None and not workspace.exists(), "the partial downloads are removed"
    assert not Repository.objects.filter(name="repo").exists(), "its first sync stopped: no empty repository left"
    assert verify_store(artifact_store()).problems() == 0, "no temp file left, the store agrees with its rows"
