"""The same downloader checks against nginx serving the same tree: not only our own server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.checks import Subject, check_all_failed, check_all_fetched, read_requests
from downloaders import DownloadFailure, DownloadRequest, HttpStatusError
from fixtures.nginx import RunningNginx, serve_with_nginx

pytestmark = pytest.mark.nginx


@pytest.fixture(scope="module")
def nginx(tree: Path) -> Iterator[RunningNginx]:
    with serve_with_nginx(tree) as running:
        yield running


@pytest.mark.parametrize("manifest", ["PULP_MANIFEST_100", "many-small/PULP_MANIFEST"])
def test_fetches_every_file_verified_from_nginx(
    subject: Subject, tree: Path, nginx: RunningNginx, tmp_path: Path, manifest: str
) -> None:
    requests = read_requests(tree, nginx.url, manifest)
    outcomes = subject.fetch_all(requests, tmp_path, download_concurrency=16)
    check_all_fetched(subject, requests, outcomes, tmp_path, attempts=1, rule=1, must="fetch every file nginx serves")


def test_not_found_from_nginx(subject: Subject, nginx: RunningNginx, tmp_path: Path) -> None:
    requests = [DownloadRequest(nginx.url + "nope.bin", "nope.bin")]
    outcomes = subject.fetch_all(requests, tmp_path)
    must = "never retry a 404"
    check_all_failed(subject, requests, outcomes, tmp_path, error=HttpStatusError, attempts=1, rule=7, must=must)
    [failure] = outcomes
    assert isinstance(failure, DownloadFailure) and isinstance(failure.error, HttpStatusError)
    assert failure.error.status == 404
