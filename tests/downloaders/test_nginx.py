"""The same downloader checks against nginx serving the same tree: not only our own server."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from downloaders import DownloadFailure, DownloadRequest, DownloadResult, HttpStatusError
from fixtures.nginx import serve_with_nginx
from tests.downloaders.conftest import fetch_all, read_requests
from tests.downloaders.test_engines import assert_verified

pytestmark = pytest.mark.nginx


@pytest.fixture(scope="module")
def nginx(tree: Path) -> Iterator[object]:
    with serve_with_nginx(tree) as running:
        yield running


@pytest.mark.parametrize("manifest", ["PULP_MANIFEST_100", "many-small/PULP_MANIFEST"])
def test_fetches_every_file_verified_from_nginx(engine: str, tree: Path, nginx, temp_dir: Path, manifest: str) -> None:
    requests = read_requests(tree, nginx.url, manifest)
    outcomes = fetch_all(engine, requests, temp_dir, download_concurrency=16)
    results = [o for o in outcomes if isinstance(o, DownloadResult)]
    assert len(results) == len(requests)
    assert_verified(results)


def test_not_found_from_nginx(engine: str, nginx, temp_dir: Path) -> None:
    [failure] = fetch_all(engine, [DownloadRequest(nginx.url + "nope.bin", "nope.bin")], temp_dir)
    assert isinstance(failure, DownloadFailure) and isinstance(failure.error, HttpStatusError)
    assert failure.error.status == 404 and failure.attempts == 1
