"""The downloader contract, checked for every installed engine against our fixture server."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from downloaders import (
    DigestMismatch,
    DownloadConnectionError,
    DownloadFailure,
    DownloadRequest,
    DownloadResult,
    DownloadTimeout,
    HttpStatusError,
    Outcome,
    SizeMismatch,
    UnsupportedURL,
)
from fixtures.faults import FaultConfig
from fixtures.profiles import PROFILES
from fixtures.server import serve_in_background
from tests.downloaders.conftest import fetch_all, read_requests


def results_of(outcomes: list[Outcome]) -> list[DownloadResult]:
    return [o for o in outcomes if isinstance(o, DownloadResult)]


def failures_of(outcomes: list[Outcome]) -> list[DownloadFailure]:
    return [o for o in outcomes if isinstance(o, DownloadFailure)]


def assert_only_results_left(temp_dir: Path, outcomes: list[Outcome]) -> None:
    """Nothing but the verified files handed over is in the temp dir: no partial download survives."""
    assert sorted(temp_dir.iterdir()) == sorted(r.path for r in results_of(outcomes))


def assert_verified(results: list[DownloadResult]) -> None:
    for result in results:
        body = result.path.read_bytes()
        assert len(body) == result.size == result.request.size
        assert hashlib.sha256(body).hexdigest() == result.sha256 == result.request.sha256
        assert result.finished >= result.started


def test_fetches_every_file_verified(engine: str, tree: Path, server, temp_dir: Path) -> None:
    requests = read_requests(tree, server.url, "PULP_MANIFEST_100")
    outcomes = fetch_all(engine, requests, temp_dir)
    assert not failures_of(outcomes)
    assert sorted(r.request.relative_path for r in results_of(outcomes)) == sorted(r.relative_path for r in requests)
    assert_verified(results_of(outcomes))
    assert all(r.attempts == 1 for r in results_of(outcomes))


def test_many_small_files(engine: str, tree: Path, server, temp_dir: Path) -> None:
    requests = read_requests(tree, server.url, "many-small/PULP_MANIFEST")[:2000]
    outcomes = fetch_all(engine, requests, temp_dir, download_concurrency=20)
    assert len(results_of(outcomes)) == len(requests)
    assert_verified(results_of(outcomes))


def test_concurrency_is_bounded_as_the_server_sees_it(engine: str, tree: Path, temp_dir: Path) -> None:
    requests = read_requests(tree, "", "PULP_MANIFEST_100")
    profile = PROFILES["wan"]
    with serve_in_background(tree, profile=profile) as running:
        requests = [DownloadRequest(running.url + r.url, r.relative_path, r.sha256, r.size) for r in requests[:40]]
        outcomes = fetch_all(engine, requests, temp_dir, download_concurrency=4)
        stats = running.stats()
    assert len(results_of(outcomes)) == 40
    assert 2 <= stats["max_in_flight"] <= 4


def test_not_found_fails_at_once_with_the_url(engine: str, server, temp_dir: Path) -> None:
    url = server.url + "files/no-such-file.bin"
    [failure] = fetch_all(engine, [DownloadRequest(url, "no-such-file.bin")], temp_dir)
    assert isinstance(failure, DownloadFailure)
    assert isinstance(failure.error, HttpStatusError) and failure.error.status == 404
    assert failure.attempts == 1 and url in str(failure.error)
    assert not list(temp_dir.iterdir())


def test_only_http_and_https(engine: str, temp_dir: Path) -> None:
    for url in ("file:///etc/passwd", "ftp://127.0.0.1/x", "/etc/passwd"):
        [failure] = fetch_all(engine, [DownloadRequest(url, "x")], temp_dir)
        assert isinstance(failure, DownloadFailure) and isinstance(failure.error, UnsupportedURL)
        assert failure.attempts == 1


@pytest.mark.parametrize(
    "faults",
    [
        FaultConfig(http_5xx=1.0, max_per_path=1),
        FaultConfig(reset=1.0, max_per_path=1),
        FaultConfig(truncate=1.0, max_per_path=1),
        FaultConfig(corrupt=1.0, max_per_path=1),
    ],
    ids=["5xx", "reset", "truncate", "corrupt"],
)
def test_transient_fault_then_success(engine: str, tree: Path, temp_dir: Path, faults: FaultConfig) -> None:
    with serve_in_background(tree, faults=faults) as running:
        requests = read_requests(tree, running.url)[:10]
        outcomes = fetch_all(engine, requests, temp_dir, download_concurrency=4)
    assert not failures_of(outcomes)
    assert_verified(results_of(outcomes))
    assert all(r.attempts == 2 for r in results_of(outcomes))
    assert_only_results_left(temp_dir, outcomes)


def test_429_waits_for_retry_after(engine: str, tree: Path, temp_dir: Path) -> None:
    with serve_in_background(tree, faults=FaultConfig(http_429=1.0, max_per_path=1, retry_after=1)) as running:
        requests = read_requests(tree, running.url)[:3]
        outcomes = fetch_all(engine, requests, temp_dir)
    assert all(r.attempts == 2 and r.seconds >= 0.95 for r in results_of(outcomes))
    assert len(results_of(outcomes)) == 3


@pytest.mark.parametrize(
    ("faults", "error_type"),
    [
        (FaultConfig(http_5xx=1.0), HttpStatusError),
        (FaultConfig(reset=1.0), DownloadConnectionError),
        (FaultConfig(truncate=1.0), DownloadConnectionError),
    ],
    ids=["5xx", "reset", "truncate"],
)
def test_persistent_fault_fails_after_max_retries(
    engine: str, tree: Path, temp_dir: Path, faults: FaultConfig, error_type: type
) -> None:
    with serve_in_background(tree, faults=faults) as running:
        requests = read_requests(tree, running.url)[:3]
        outcomes = fetch_all(engine, requests, temp_dir, max_retries=2)
    assert len(failures_of(outcomes)) == 3
    for failure in failures_of(outcomes):
        assert isinstance(failure.error, error_type) and failure.attempts == 3
        assert failure.request.url in str(failure.error)
    assert not list(temp_dir.iterdir())


def test_corrupt_body_is_retried_once_then_fails(engine: str, tree: Path, temp_dir: Path) -> None:
    with serve_in_background(tree, faults=FaultConfig(corrupt=1.0)) as running:
        outcomes = fetch_all(engine, read_requests(tree, running.url)[:3], temp_dir, max_retries=5)
    for failure in failures_of(outcomes):
        assert isinstance(failure.error, DigestMismatch) and failure.attempts == 2
    assert len(failures_of(outcomes)) == 3
    assert not list(temp_dir.iterdir())


def test_size_mismatch_is_typed(engine: str, tree: Path, server, temp_dir: Path) -> None:
    request = read_requests(tree, server.url)[0]
    short = DownloadRequest(request.url, request.relative_path, request.sha256, request.size - 1)
    [failure] = fetch_all(engine, [short], temp_dir)
    assert isinstance(failure, DownloadFailure) and isinstance(failure.error, SizeMismatch)
    assert failure.error.expected == request.size - 1
    assert not list(temp_dir.iterdir())


def test_read_stall_past_sock_read_timeout(engine: str, tree: Path, temp_dir: Path) -> None:
    with serve_in_background(tree, faults=FaultConfig(stall=1.0, stall_seconds=30)) as running:
        started = time.monotonic()
        outcomes = fetch_all(engine, read_requests(tree, running.url)[:2], temp_dir, sock_read_timeout=0.5, max_retries=1)
    assert time.monotonic() - started < 20
    assert len(failures_of(outcomes)) == 2
    assert all(isinstance(f.error, DownloadTimeout) and f.attempts == 2 for f in failures_of(outcomes))
    assert not list(temp_dir.iterdir())


def test_closing_early_cancels_and_leaves_no_file(engine: str, tree: Path, server, temp_dir: Path) -> None:
    import downloaders
    from downloaders import DownloaderSettings

    requests = read_requests(tree, server.url, "PULP_MANIFEST_500")
    fetch = downloaders.load(engine)(DownloaderSettings(download_concurrency=4)).fetch(iter(requests), temp_dir)
    first = next(fetch)
    assert isinstance(first, DownloadResult)
    fetch.close()
    assert list(temp_dir.iterdir()) == [first.path]
