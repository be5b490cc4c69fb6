"""The sync pipeline of DESIGN.md: manifest, plan, downloads, then one new repository version.

    fetch the manifest ─> validate every line, spool what the DB lacks ─> download the spool
    ─> adopt + record each artifact ─> one transaction: content rows and the new version

Every downloader is used only through `downloaders.load(name)` and `fetch(requests, temp_dir)`,
so two syncs differ in nothing but the downloader. The database is touched only from the caller's
thread: the downloader reads its requests from a spool file in the sync's workspace.
"""

from __future__ import annotations

import logging
import shutil
import statistics
import time
from collections.abc import Generator, Iterator
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

import downloaders
from downloaders import (
    AddressRefused,
    BodyTooLarge,
    ConcurrencyLimit,
    Downloader,
    DownloadError,
    DownloaderSettings,
    DownloadFailure,
    DownloadRequest,
    DownloadResult,
    DownloadTimeout,
    TLSVerificationError,
    UnknownDownloader,
)
from pulp_base.manifest import MANIFEST_NAME, ManifestError, file_url, parse_manifest
from pulp_sync import defaults, locks
from pulp_sync.content.bulk import batches, insert_rows, now_for_insert
from pulp_sync.content.store import ArtifactStore, artifact_store
from pulp_sync.database import retried
from pulp_sync.messages import one_line, redact
from pulp_sync.models import Artifact, FileContent, Remote, Repository, RepositoryContent, RepositoryVersion
from pulp_sync.progress import NullProgress, ProgressSink, ShardsSink
from pulp_sync.sync.split.forked import Runner, run_shards
from pulp_sync.sync.split.planning import (
    Shard,
    ShardCounts,
    ShardFailed,
    ShardStopped,
    budget_share,
    how_many,
    most_processes,
    split,
    together,
)
from pulp_sync.sync.spool import read_spool, spool_line

__all__ = ["SyncError", "SyncReport", "sync_repository", "DownloadStopped", "download_shard", "discard_if_never_synced"]


log = logging.getLogger(__name__)

@dataclass(frozen=True)
class SyncReport:
    """What one sync did. `version` is None when nothing changed (or, with failures, when it failed)."""

    repository: str
    version: int | None
    artifacts_downloaded: int
    artifacts_skipped: int
    content_units: int
    bytes_downloaded: int
    seconds: float
    mb_per_s: float
    retries: int
    failures: int
    downloader: str
    concurrency: int
    latency_p50: float | None
    latency_p90: float | None
    latency_p99: float | None
    slot_wait_p50: float | None = None
    slot_wait_p90: float | None = None
    slot_wait_p99: float | None = None
    """Percentiles of the downloads' waits for a concurrency slot (DownloadResult.queue_seconds), apart
    from their latency; None from a downloader that does not report them, and in reports made before."""
    processes: int = 1
    """Processes the downloads were split across (Remote.download_processes; pulp_sync.sync.split.planning)."""
    connections: int | None = None
    """Downloads in flight at most, the sync's processes together: its processes share `concurrency`
    (pulp_sync.sync.split.planning.budget_share), so the two are equal, or `max_concurrency` with
    `auto_concurrency`. None in reports made before the budget was the sync's, when each process had the whole
    `concurrency`."""
    auto_concurrency: bool = False
    """Whether the downloads in flight were found while syncing (downloaders.concurrency); `concurrency` is then
    the limit the sync spent the most time at, its processes' together."""
    concurrency_trajectory: list[dict[str, float]] | None = None
    """The limit over time, `{"seconds": s, "limit": n}` at each change from the start of the downloads, the
    processes' together; None from a downloader that keeps no record."""

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values."""
        return asdict(self)

    def summary(self) -> str:
        """One line for people: what changed, how much, how fast, with what."""
        outcome = f" version {self.version}" if self.version is not None else ", unchanged"
        return (
            f"Synced {self.repository}{outcome}: {self.artifacts_downloaded} artifacts downloaded, "
            f"{self.artifacts_skipped} skipped, {self.bytes_downloaded / 1e6:.1f} MB in {self.seconds:.1f} s "
            f"({self.mb_per_s:.1f} MB/s) with {self.downloader} x{self.concurrency}"
            + (f" (auto, up to {self.connections})" if self.auto_concurrency else "")
            + (f" shared by {self.processes} processes" if self.processes > 1 else "")
        )


class DownloadStopped(ShardStopped):
    """A download failed for good, so the sync (or the shard) stops there, keeping what it adopted;
    the message says which file and why. `counts` is what the downloads did until then."""

    def __init__(self, failure: DownloadFailure, counts: ShardCounts) -> None:
        super().__init__(f"could not download {failure.request.relative_path} after {failure.attempts} "
                         f"attempt(s): {failure.error}", counts)
        self.failure = failure


class SyncError(Exception):
    """A sync that did not complete: no version was created and the current one stays current.

    `error` is the typed cause (a DownloadError, a ManifestError, ...); `report` is what the sync
    did before it stopped, when it got as far as downloading.
    """

    def __init__(self, message: str, error: BaseException | None = None, report: SyncReport | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.report = report


@dataclass
class _Tally:
    """What a sync did so far; it becomes the SyncReport. The clock starts when the tally is made."""

    repository: str
    downloader: str
    concurrency: int
    started: float = field(default_factory=time.monotonic)
    content_units: int = 0
    skipped: int = 0
    downloaded: int = 0
    bytes: int = 0
    retries: int = 0
    failures: int = 0
    latencies: list[float] = field(default_factory=list)
    slot_waits: list[float] = field(default_factory=list)
    processes: int = 1
    bound: int | None = None
    """The most downloads in flight (`DownloaderSettings.concurrency_bound`); None: `concurrency`."""
    auto: bool = False
    trajectories: list[list[tuple[float, int]]] = field(default_factory=list)
    """The concurrency limits over time of each fetch of files (one, or one per shard)."""
    settled: int = 0
    """The limits the fetches of files spent the most time at, added up (0: none recorded)."""

    @classmethod
    def of(cls, repository: str, downloader: str, options: DownloaderSettings) -> _Tally:
        """The tally of a sync with these settings, its clock started."""
        return cls(repository, downloader, options.download_concurrency, bound=options.concurrency_bound,
                   auto=options.auto_concurrency)

    def record(self, limit: ConcurrencyLimit | None) -> None:
        """Keep a fetch's concurrency record (a downloader's `concurrency`, when it keeps one)."""
        if isinstance(limit, ConcurrencyLimit):
            self.trajectories.append([(change.seconds, change.limit) for change in limit.trajectory()])
            self.settled += limit.settled()

    def count(self, outcome: DownloadResult | DownloadFailure) -> None:
        """Tally an outcome; a latency or queue time its downloader did not measure is left out, not guessed."""
        self.retries += outcome.attempts - 1
        if isinstance(outcome, DownloadFailure):
            self.failures += 1
            return
        self.downloaded += 1
        self.bytes += outcome.size
        if outcome.latency is not None:
            self.latencies.append(outcome.latency)
        if outcome.queue_seconds is not None:
            self.slot_waits.append(outcome.queue_seconds)

    def advance(self, files: int, size: int) -> None:
        """Tally what a shard's progress says it downloaded and adopted."""
        self.downloaded += files
        self.bytes += size

    def add(self, counts: ShardCounts) -> None:
        """Tally what a shard reports at its end, besides its progress."""
        self.retries += counts.retries
        self.failures += counts.failures
        self.latencies += counts.latencies
        self.slot_waits += counts.slot_waits
        if counts.trajectory:
            self.trajectories.append([(seconds, int(limit)) for seconds, limit in counts.trajectory])
            self.settled += counts.settled

    def counts(self) -> ShardCounts:
        """What this tally would tell a parent sync (`add`)."""
        trajectory = together(self.trajectories)
        return ShardCounts(self.retries, self.failures, self.latencies, self.slot_waits, trajectory, self.settled)

    def report(self, version: int | None) -> SyncReport:
        seconds = time.monotonic() - self.started
        p50, p90, p99 = _percentiles(self.latencies)
        slot_wait_p50, slot_wait_p90, slot_wait_p99 = _percentiles(self.slot_waits)
        return SyncReport(
            repository=self.repository,
            version=version,
            artifacts_downloaded=self.downloaded,
            artifacts_skipped=self.skipped,
            content_units=self.content_units,
            bytes_downloaded=self.bytes,
            seconds=seconds,
            mb_per_s=self.bytes / 1e6 / seconds if seconds > 0 else 0.0,
            retries=self.retries,
            failures=self.failures,
            downloader=self.downloader,
            concurrency=self.settled if self.auto and self.settled else self.concurrency,
            latency_p50=p50,
            latency_p90=p90,
            latency_p99=p99,
            slot_wait_p50=slot_wait_p50,
            slot_wait_p90=slot_wait_p90,
            slot_wait_p99=slot_wait_p99,
            processes=self.processes,
            connections=self.bound or self.concurrency,
            auto_concurrency=self.auto,
            concurrency_trajectory=[{"seconds": seconds, "limit": limit} for seconds, limit in
                                    together(self.trajectories)] if self.trajectories else None,
        )


@dataclass
class _Plan:
    """The downloads a sync needs: spooled to a file, with their count and bytes (for progress)."""

    spool: Path
    missing: int = 0
    missing_bytes: int = 0


def sync_repository(
    remote: Remote,
    repository: Repository,
    progress: ProgressSink | None = None,
    workspace_prefix: str = "sync",
    manifest_file: Path | None = None,
    runner: Runner = run_shards,
) -> SyncReport:
    """Sync `repository` from `remote` and return what was done; raise SyncError if it cannot finish.

    A failed sync creates no version; the artifacts it already downloaded are verified and kept,
    so syncing again downloads only the rest. `workspace_prefix` names the sync's temp dir in the
    store (see ArtifactStore.workspace). With `manifest_file` the manifest's lines are read from
    that local file (a sample of the remote's, say) instead of the remote's URL; the files are
    fetched relative to the URL all the same. `runner` runs the shards of a split sync
    (Remote.download_processes): processes on this host, or an RQ task's (pulp_sync.sync.split.board).
    """
    downloader, options = downloader_for(remote)
    store = artifact_store()
    progress = progress or NullProgress()
    with _one_sync_at_a_time(repository):
        tally = _Tally.of(repository.name, remote.downloader, options)
        try:
            with store.workspace(workspace_prefix) as workspace:
                if manifest_file is None:
                    manifest = _fetch_manifest(downloader, remote.url, workspace)
                else:
                    manifest = _copy_manifest(manifest_file, workspace)
                plan = _plan_or_refuse(manifest, remote.url, workspace, tally)
                tally.processes = how_many(remote.download_processes, plan.missing, plan.missing_bytes,
                                           most_processes(options))
                if tally.processes > 1:
                    _download_in_shards(remote, plan, workspace, progress, tally, runner)
                else:
                    _download(downloader, remote.url, plan, store, workspace, progress, tally)
                version = _create_version(repository, manifest)
        except DownloadStopped as stopped:
            raise SyncError(f"{stopped}; {_unchanged(tally)}", stopped.failure.error, tally.report(None)) from None
        except ShardFailed as failed:
            raise SyncError(f"{failed}; {_unchanged(tally)}", failed, tally.report(None)) from failed
        except OSError as error:
            raise SyncError(f"{one_line(error)}; {_unchanged(tally)}", error, tally.report(None)) from error
    return tally.report(version)


def _download_in_shards(remote: Remote, plan: _Plan, workspace: Path, progress: ProgressSink, tally: _Tally,
                        runner: Runner) -> None:
    """The planned downloads in `tally.processes` shards (pulp_sync.sync.split.planning) run by `runner`, each with the
    remote's downloader and its share of the remote's budget; their progress summed into this sync's;
    ShardFailed at the first that fails."""
    shards = split(plan.spool, tally.processes, workspace)
    tally.processes = len(shards)
    prefix = workspace.name.rpartition("@")[0]  # under this sync's workspace prefix, so a reaped task's go too
    reports = [{"shard": shard.index + 1, "files": shard.files, "files_done": 0, "bytes": shard.bytes,
                "bytes_done": 0} for shard in shards]
    if isinstance(progress, ShardsSink):
        progress.shards(reports)

    def advance(index: int | None, files: int, size: int) -> None:
        if index is not None:
            tally.advance(files, size)
            reports[index]["files_done"] += files
            reports[index]["bytes_done"] += size
            if isinstance(progress, ShardsSink):
                progress.shards(reports)
        progress.advance(files, size)

    try:
        for counts in runner(shards, prefix, partial(download_shard, remote, len(shards)),
                             partial(progress.start, plan.missing, plan.missing_bytes), advance):
            tally.add(counts)
    except ShardFailed as failed:
        tally.add(failed.counts)
        raise
    finally:
        progress.finish()


def download_shard(remote: Remote, shards: int, shard: Shard, workspace_prefix: str,
                   progress: ProgressSink) -> ShardCounts:
    """A shard of a split sync of `shards`, in its own process: download, adopt and record its spooled files
    as an unsplit sync does, in a workspace of its own, with its share of the remote's budget;
    DownloadStopped at the first failure."""
    downloader, options = downloader_for(remote, shard.index, shards)
    store = artifact_store()
    tally = _Tally.of("", remote.downloader, options)
    with store.workspace(workspace_prefix) as workspace:
        plan = _Plan(shard.spool, shard.files, shard.bytes)
        _download(downloader, remote.url, plan, store, workspace, progress, tally)
    return tally.counts()


@contextmanager
def _one_sync_at_a_time(repository: Repository) -> Iterator[None]:
    """Hold the repository's lock (pulp_sync/locks.py) for the whole sync: a second sync of it, from any
    process or host, waits until the first is done, then finds its files there and, if the manifest did
    not change, nothing left to do. Waiting is logged once; waiting longer than PULP_SYNC_REPOSITORY_WAIT
    is an error."""
    wait = settings.PULP_SYNC_REPOSITORY_WAIT

    def waiting() -> None:
        log.warning("Another sync of repository %s is running: waiting for it (up to %g s)", repository.name, wait)

    try:
        with locks.held(_lock_name(repository), wait, waiting):
            yield
    except locks.LockTimeout as error:
        raise SyncError(f"another sync of repository {repository.name} still runs after {wait:g} s; nothing was "
                        "changed: sync again once it ends, or raise PULP_SYNC_REPOSITORY_WAIT", error) from error


def discard_if_never_synced(repository: Repository) -> bool:
    """Delete `repository` if it has no version, no task and no sync holding its lock; True if it did. For a
    command that made the repository to sync into: if that first sync fails, `repositories` does not list it
    empty afterwards. A repository a task names stays, whatever the task's state: one to run needs it, and a
    failed one's record names it (`tasks` shows which repository failed). A sync that waits for the lock
    finds the repository still there."""
    try:
        with locks.held(_lock_name(repository), 0), transaction.atomic():
            unsynced = Repository.objects.filter(pk=repository.pk, versions__isnull=True, tasks__isnull=True)
            deleted, _ = unsynced.delete()
    except locks.LockTimeout:
        return False
    return deleted > 0


def _lock_name(repository: Repository) -> str:
    """The name of the lock one sync of the repository at a time holds (pulp_sync/locks.py)."""
    return f"pulp_sync.repository:{repository.pk}"


def downloader_for(remote: Remote, shard: int = 0, shards: int = 1) -> tuple[Downloader, DownloaderSettings]:
    """The remote's downloader, built from its settings (shard `shard` of `shards`' share of them,
    pulp_sync.sync.split.planning.budget_share), and those settings.

    The remote-address policy is checked here on the remote's URL, whose directory every file URL is
    under, whatever the downloader: a plugin that does not yet check it (docs/plugins.md) still cannot
    be pointed at a refused host; the engines check redirects and resolved addresses themselves.
    """
    try:
        engine = downloaders.load(remote.downloader)
        options = budget_share(_within_its_means(remote.downloader_settings(), engine), shard, shards)
        options.address_policy.check_url(remote.url)
        if remote.proxy_url:
            options.address_policy.check_url(remote.proxy_url)
        return engine(options), options
    except AddressRefused as error:
        raise SyncError(f"remote {remote.name!r} cannot sync: {error.message} ({redact(error.url)})", error) from error
    except (ValueError, UnknownDownloader) as error:
        raise SyncError(f"remote {remote.name!r} cannot sync: {error}", error) from error


def _within_its_means(options: DownloaderSettings, engine: type[Downloader]) -> DownloaderSettings:
    """`options` as `engine` can follow them: `auto_concurrency` off for a downloader that does not say it
    follows a changing limit (`adapts_concurrency`, docs/plugins.md), which keeps its fixed
    `download_concurrency` as it always did."""
    if options.auto_concurrency and not downloaders.adapts(engine):
        log.info("Downloader %s keeps a fixed limit: syncing at download_concurrency %d, not auto",
                 getattr(engine, "name", engine.__name__), options.download_concurrency)
        return replace(options, auto_concurrency=False)
    return options


def _manifest_advice(error: DownloadError) -> str:
    """What to do about a manifest that could not be fetched: the setting that refused it, or the URL."""
    if isinstance(error, BodyTooLarge):
        return "raise PULP_SYNC_MAX_MANIFEST_BYTES if it is genuine"
    if isinstance(error, DownloadTimeout):
        return "raise the remote's timeouts if it is slow, or check its URL"
    if isinstance(error, TLSVerificationError):
        return "give the remote the CA that signed the server's certificate (ca_cert; `sync --ca-cert FILE`)"
    return "check the remote's URL"


def _fetch_manifest(downloader: Downloader, url: str, workspace: Path) -> Path:
    """The manifest, fetched through the same downloader as the files (no digest to check, a size limit)."""
    request = DownloadRequest(url, MANIFEST_NAME, max_size=settings.PULP_SYNC_MAX_MANIFEST_BYTES)
    with closing(downloader.fetch([request], workspace)) as outcomes:
        outcome = next(outcomes, None)
    if isinstance(outcome, DownloadFailure):
        raise SyncError(f"could not fetch the manifest: {outcome.error}; {_manifest_advice(outcome.error)}",
                        outcome.error)
    if outcome is None:
        raise SyncError(f"downloader {downloader.name!r} returned nothing for the manifest {url}")
    return outcome.path


def _copy_manifest(manifest_file: Path, workspace: Path) -> Path:
    """A local manifest, copied into the workspace so that planning and the version read the same lines;
    held to the same size limit as a fetched one."""
    limit = settings.PULP_SYNC_MAX_MANIFEST_BYTES
    if manifest_file.stat().st_size > limit:
        raise SyncError(f"the manifest file {manifest_file} is larger than {limit} bytes; "
                        "raise PULP_SYNC_MAX_MANIFEST_BYTES if it is genuine")
    return Path(shutil.copyfile(manifest_file, workspace / MANIFEST_NAME))


def _plan_or_refuse(manifest: Path, url: str, workspace: Path, tally: _Tally) -> _Plan:
    """Validate the whole manifest before anything is downloaded, and plan the downloads."""
    try:
        return _plan(manifest, workspace, tally)
    except ManifestError as error:
        raise SyncError(f"{error} (in {url}); nothing was changed: fix the manifest and sync again", error) from error


def _plan(manifest: Path, workspace: Path, tally: _Tally) -> _Plan:
    """Spool each digest the database lacks once, one lookup per batch of manifest lines."""
    plan = _Plan(workspace / "missing.spool")
    seen: set[str] = set()
    with plan.spool.open("w", encoding="utf-8") as spool:
        for batch in batches(parse_manifest(manifest), defaults.LOOKUP_BATCH):
            tally.content_units += len(batch)
            fresh = {entry.sha256: entry for entry in batch if entry.sha256 not in seen}
            seen.update(fresh)
            stored = Artifact.objects.filter(sha256__in=fresh, missing=False)
            present = set(stored.values_list("sha256", flat=True))
            tally.skipped += len(present)
            for entry in (entry for digest, entry in fresh.items() if digest not in present):
                spool.write(spool_line(entry.sha256, entry.size, entry.relative_path))
                plan.missing += 1
                plan.missing_bytes += entry.size
    return plan


def _spooled_requests(spool: Path, manifest_url: str) -> Generator[DownloadRequest, None, None]:
    """The spooled downloads as requests, read lazily in the downloader's thread (no DB there)."""
    for planned in read_spool(spool):
        yield DownloadRequest(file_url(manifest_url, planned.relative_path), planned.relative_path, planned.sha256,
                              planned.size)


def _download(
    downloader: Downloader,
    manifest_url: str,
    plan: _Plan,
    store: ArtifactStore,
    workspace: Path,
    progress: ProgressSink,
    tally: _Tally,
) -> None:
    """Download, adopt and record every spooled request; at the first failure stop and keep what was adopted.

    The spool's reader is closed here, after the fetch has joined the thread that reads it: left to the
    garbage collector, a failed sync's traceback would keep the spool open in the store for a while."""
    recorder = _ArtifactRecorder(store)
    progress.start(plan.missing, plan.missing_bytes)
    try:
        with (closing(_spooled_requests(plan.spool, manifest_url)) as requests,
              closing(downloader.fetch(requests, workspace)) as outcomes):
            for outcome in outcomes:
                tally.count(outcome)
                if isinstance(outcome, DownloadFailure):
                    raise DownloadStopped(outcome, tally.counts())
                recorder.add(outcome)
                progress.advance(1, outcome.size)
    finally:
        tally.record(getattr(downloader, "concurrency", None))
        recorder.flush()
        progress.finish()


def _unchanged(tally: _Tally) -> str:
    return (
        f"{tally.repository!r} is unchanged, and the {tally.downloaded} artifact(s) downloaded are kept, "
        "so syncing again resumes"
    )


class _ArtifactRecorder:
    """Adopts verified downloads into the store and records them, a batch at a time, crash-safe.

    A batch is recorded as missing, moved into place, then marked present: a process killed at
    any moment leaves no file in the store without its row (an orphan), and no row that claims a
    file which is not there; only the workspace's temp files, which `verify --repair` removes.
    """

    def __init__(self, store: ArtifactStore) -> None:
        self._store = store
        self._results: list[DownloadResult] = []
        self._flushed = time.monotonic()

    def add(self, result: DownloadResult) -> None:
        request = result.request
        if (result.sha256, result.size) != (request.sha256, request.size):
            raise SyncError(f"the downloader handed over unverified bytes for {request.url}: it must check the digest")
        self._results.append(result)
        if len(self._results) >= defaults.INSERT_BATCH or time.monotonic() - self._flushed >= defaults.FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Record, place and confirm the batch; if that fails, what was not placed stays marked missing.

        Rows go in sorted by digest, so that concurrent syncs inserting the same artifacts lock them
        in one order (two orders can deadlock); a deadlock that happens all the same is retried.
        """
        store, results = self._store, self._results
        if not results:
            return
        try:
            now = now_for_insert(Artifact)
            digests = sorted({r.sha256: r.size for r in results}.items())
            rows = [(digest, size, store.relative_path_for(digest), now, True) for digest, size in digests]
            retried(lambda: insert_rows(Artifact, ("sha256", "size", "relative_path", "created", "missing"), rows,
                                        ignore_conflicts=True))
            for result in results:
                store.adopt(result.path, result.sha256)
            placed = Artifact.objects.filter(sha256__in=[digest for digest, _ in digests], missing=True)
            retried(lambda: placed.update(missing=False))
        finally:
            results.clear()
            self._flushed = time.monotonic()


def _create_version(repository: Repository, manifest: Path) -> int | None:
    """Make the manifest's content the repository's new version, in one transaction; None if unchanged.

    The content rows are made first, each batch in a transaction of its own: they are shared by every
    repository, and a version's transaction holding them all while other syncs insert theirs in
    another order is how PostgreSQL deadlocked. The repository's lock (see _one_sync_at_a_time) keeps
    its versions in order; the row lock below keeps them so for any caller that holds no such lock.
    """
    content = _content_ids(manifest)

    def new_version() -> int | None:
        with transaction.atomic():
            locked = Repository.objects.select_for_update().get(pk=repository.pk)
            latest = locked.latest_version()
            if latest is not None and set(latest.content.values_list("pk", flat=True)) == content:
                return None
            version = RepositoryVersion.objects.create(repository=locked, number=latest.number + 1 if latest else 1)
            for batch in batches(((version.pk, pk) for pk in sorted(content)), defaults.INSERT_BATCH):
                insert_rows(RepositoryContent, ("version", "content"), batch)
            return version.number

    return retried(new_version)


def _content_ids(manifest: Path) -> set[int]:
    """Get or create the FileContent of every manifest line, a batch at a time, sorted by key (see
    _ArtifactRecorder.flush); their ids."""
    ids: set[int] = set()
    for batch in batches(parse_manifest(manifest), defaults.LOOKUP_BATCH):
        artifacts = dict(Artifact.objects.filter(sha256__in={e.sha256 for e in batch}).values_list("sha256", "pk"))
        rows = {
            FileContent.key_for(e.relative_path, e.sha256): (e.relative_path, artifacts[e.sha256]) for e in batch
        }
        ordered = [(key, path, pk) for key, (path, pk) in sorted(rows.items())]
        retried(partial(insert_rows, FileContent, ("key", "relative_path", "artifact"), ordered, ignore_conflicts=True))
        ids.update(FileContent.objects.filter(key__in=rows).values_list("pk", flat=True))
    return ids


def _percentiles(times: list[float]) -> tuple[float | None, float | None, float | None]:
    """p50, p90, p99 of some per-download times (latencies, waits for a slot); None without any.

    statistics.quantiles with method="inclusive" interpolates linearly between order statistics
    (Hyndman & Fan type 7, numpy's default), right for a complete set of observations.
    """
    if len(times) < 2:
        return (times[0],) * 3 if times else (None, None, None)
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    return cuts[49], cuts[89], cuts[98]
