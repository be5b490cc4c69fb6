"""Harness tests: pure parts on synthetic runs, and real experiments on a tiny tree via the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.generate import generate_tree
from tests.harness.helpers import TINY_SCALE


@pytest.fixture(scope="session")
def tiny_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small file-example tree shared by every real experiment of the session."""
    root = tmp_path_factory.mktemp("tree")
    generate_tree(root, TINY_SCALE)
    return root
