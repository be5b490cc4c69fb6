"""Downloader tests beyond the contract (which is conformance/): every installed downloader on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

import downloaders
from conformance.checks import Subject
from fixtures.generate import generate_tree


@pytest.fixture(params=sorted(downloaders.available()))
def subject(request: pytest.FixtureRequest) -> Subject:
    """Each installed downloader in turn."""
    return Subject(request.param, downloaders.load(request.param))


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small file-example tree (about 2 MB for the 100 set, 10,000 small files)."""
    root = tmp_path_factory.mktemp("tree")
    generate_tree(root, scale=0.005)
    return root
