"""sync_repository with each downloader against a real server: complete, verified, idempotent, safe."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from downloaders import HttpStatusError
from pulp_base.manifest import ManifestError, parse_manifest
from pulp_sync.content.store import artifact_store
from pulp_sync.models import Artifact, FileContent, Remote, Repository, RepositoryVersion
from pulp_sync.sync.pipeline import SyncError, sync_repository
from tests.pulp_sync.conftest import ENGINES


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


def remote_for(url: str, engine: str) -> Remote:
    return Remote.objects.create(name="remote", url=url, downloader=engine, download_concurrency=4)


def manifest_of(tree: Path, manifest: str) -> set[tuple[str, str]]:
    return {(entry.relative_path, entry.sha256) for entry in parse_manifest(tree / manifest)}


def version_content(version: RepositoryVersion) -> set[tuple[str, str]]:
    return set(version.content.values_list("relative_path", "artifact__sha256"))


def assert_store_is_sound(interrupted: bool = False) -> None:
    """Every stored file has its digest and a row, every row its file, and no temp file is left. With
    `interrupted` (a sync stopped part-way), a row may also be marked missing with no file: the recorder
    inserts a batch's rows as missing before it moves their files into place (sync._ArtifactRecorder), and
    the next sync fetches what such a row names again."""
    store = artifact_store()
    stored = {f"{path.parent.name}{path.name}" for path in (store.root / "artifact").glob("*/*")}
    for digest in stored:
        assert hashlib.sha256(store.path_for(digest).read_bytes()).hexdigest() == digest
    rows = Artifact.objects.filter(missing=False) if interrupted else Artifact.objects.all()
    assert stored == set(rows.values_list("sha256", flat=True))
    assert list(store.temp_dir.iterdir()) == []


def test_sync_stores_every_file_and_records_the_manifest(db: Path, server: str, tree: Path, engine: str) -> None:
    repository = Repository.objects.create(name="good")
    report = sync_repository(remote_for(server + "good/PULP_MANIFEST", engine), repository)

    expected = manifest_of(tree, "good/PULP_MANIFEST")
    sizes = {entry.sha256: entry.size for entry in parse_manifest(tree / "good" / "PULP_MANIFEST")}
    assert (report.version, report.content_units, report.artifacts_skipped, report.failures) == (1, 12, 0, 0)
    assert (report.artifacts_downloaded, report.bytes_downloaded) == (len(sizes), sum(sizes.values()))
    assert report.artifacts_downloaded == 11
    assert report.downloader == engine and report.concurrency == 4
    assert 0 < report.latency_p50 <= report.latency_p90 <= report.latency_p99  # type: ignore[operator]
    latest = repository.latest_version()
    assert latest is not None and version_content(latest) == expected
    assert_store_is_sound()


def test_second_sync_downloads_nothing_and_keeps_the_version(db: Path, server: str, engine: str) -> None:
    remote, repository = remote_for(server + "good/PULP_MANIFEST", engine), Repository.objects.create(name="good")
    sync_repository(remote, repository)
    again = sync_repository(remote, repository)
    assert (again.version, again.artifacts_downloaded, again.artifacts_skipped) == (None, 0, 11)
    assert again.bytes_downloaded == 0
    assert again.latency_p50 is None
    assert RepositoryVersion.objects.count() == 1
    assert FileContent.objects.count() == 12


def test_changed_manifest_makes_the_next_version(db: Path, server: str, tree: Path, engine: str) -> None:
    remote, repository = remote_for(server + "good/PULP_MANIFEST", engine), Repository.objects.create(name="repo")
    sync_repository(remote, repository)
    remote.url = server + "subset/PULP_MANIFEST"
    report = sync_repository(remote, repository)
    assert (report.version, report.artifacts_downloaded, report.content_units) == (2, 0, 4)
    latest = repository.latest_version()
    assert latest is not None and version_content(latest) == manifest_of(tree, "subset/PULP_MANIFEST")
    assert version_content(repository.versions.get(number=1)) == manifest_of(tree, "good/PULP_MANIFEST")


def test_bad_manifest_line_changes_nothing(db: Path, server: str, engine: str) -> None:
    repository = Repository.objects.create(name="bad")
    with pytest.raises(SyncError, match="PULP_MANIFEST line 13: sha256 'abc'") as caught:
        sync_repository(remote_for(server + "bad/PULP_MANIFEST", engine), repository)
    assert isinstance(caught.value.error, ManifestError) and caught.value.error.line == 13
    assert not Artifact.objects.exists() and not FileContent.objects.exists()
    assert not RepositoryVersion.objects.exists()
    assert not (artifact_store().root / "artifact").exists()
    assert_store_is_sound()


def test_missing_file_fails_without_a_version(db: Path, server: str, engine: str) -> None:
    repository = Repository.objects.create(name="missing")
    with pytest.raises(SyncError, match=r"could not download gone\.iso after \d attempt\(s\): HTTP 404") as caught:
        sync_repository(remote_for(server + "missing/PULP_MANIFEST", engine), repository)
    error = caught.value
    assert isinstance(error.error, HttpStatusError) and error.error.status == 404
    assert error.report is not None and error.report.failures == 1 and error.report.version is None
    assert not RepositoryVersion.objects.exists()
    assert_store_is_sound()


def test_missing_manifest_is_a_sync_error(db: Path, server: str, engine: str) -> None:
    with pytest.raises(SyncError, match="could not fetch the manifest: HTTP 404") as caught:
        sync_repository(remote_for(server + "nowhere/PULP_MANIFEST", engine), Repository.objects.create(name="x"))
    assert isinstance(caught.value.error, HttpStatusError)
    assert_store_is_sound()


def test_unknown_downloader_is_a_sync_error(db: Path, server: str) -> None:
    with pytest.raises(SyncError, match="no downloader named 'nope'"):
        sync_repository(remote_for(server + "good/PULP_MANIFEST", "nope"), Repository.objects.create(name="x"))



def test_a_bigger_manifest_downloads_only_what_is_new(db: Path, server: str, tree: Path, engine: str) -> None:
    remote, repository = remote_for(server + "subset/PULP_MANIFEST", engine), Repository.objects.create(name="repo")
    first = sync_repository(remote, repository)
    remote.url = server + "good/PULP_MANIFEST"
    second = sync_repository(remote, repository)
    assert (first.version, first.artifacts_downloaded, first.content_units) == (1, 4, 4)
    assert (second.version, second.artifacts_downloaded, second.artifacts_skipped) == (2, 7, 4)
    latest = repository.latest_version()
    assert latest is not None and version_content(latest) == manifest_of(tree, "good/PULP_MANIFEST")
    assert_store_is_sound()


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/PULP_MANIFEST", "http://[fe80::1]/PULP_MANIFEST"])
def test_a_sync_from_a_link_local_address_is_refused_before_any_connection(db: Path, url: str) -> None:
    remote = Remote.objects.create(name="metadata", url=url, downloader="asyncio", max_retries=0)
    with pytest.raises(SyncError, match="cannot sync: not fetched: .* is denied by the remote-address policy"):
        sync_repository(remote, Repository.objects.create(name="metadata"))
