"""Downloader tests run every installed downloader against real servers on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

import downloaders
from downloaders import DownloaderSettings, DownloadRequest, Outcome
from fixtures.generate import generate_tree
from fixtures.server import serve_in_background


def read_requests(root: Path, base_url: str, manifest: str = "PULP_MANIFEST") -> list[DownloadRequest]:
    """The manifest's lines as requests against `base_url` (the tree's root on some server)."""
    folder = str(Path(manifest).parent)
    prefix = "" if folder == "." else folder + "/"
    requests = []
    for line in (root / manifest).read_text().splitlines():
        path, digest, size = line.split(",")
        requests.append(DownloadRequest(f"{base_url}{prefix}{path}", path, digest, int(size)))
    return requests


def fetch_all(engine: str, requests: list[DownloadRequest], temp_dir: Path, **settings: object) -> list[Outcome]:
    """Run one fetch to its end with fast backoff unless the test says otherwise."""
    settings.setdefault("backoff_base", 0.01)
    downloader = downloaders.load(engine)(DownloaderSettings(**settings))
    return list(downloader.fetch(iter(requests), temp_dir))


@pytest.fixture(params=sorted(downloaders.available()))
def engine(request: pytest.FixtureRequest) -> str:
    """Each installed downloader in turn."""
    return request.param


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small file-example tree (about 2 MB for the 100 set, 10,000 small files)."""
    root = tmp_path_factory.mktemp("tree")
    generate_tree(root, scale=0.005)
    return root


@pytest.fixture(scope="session")
def server(tree: Path) -> Iterator[object]:
    """Our fixture server on the loopback profile, no faults."""
    with serve_in_background(tree) as running:
        yield running


@pytest.fixture
def temp_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "downloads"
    folder.mkdir()
    return folder
