"""pulp_sync tests: a real sqlite database under a temp PULP_SYNC_HOME, real HTTP on 127.0.0.1."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

import pulp_sync
from fixtures.server import serve_in_background
from pulp_sync import database

ENGINES = ["asyncio", "futures"]


def manifest_line(relative_path: str, body: bytes) -> str:
    return f"{relative_path},{hashlib.sha256(body).hexdigest()},{len(body)}\n"


def write_repository(folder: Path, files: dict[str, bytes], extra_lines: str = "") -> None:
    """Write `files` under `folder` and a PULP_MANIFEST listing them (plus `extra_lines`)."""
    for relative_path, body in files.items():
        path = folder / relative_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    lines = "".join(manifest_line(path, body) for path, body in files.items())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "PULP_MANIFEST").write_text(lines + extra_lines, encoding="utf-8")


def sample_files() -> dict[str, bytes]:
    """Twelve files: sizes from 0 to 300 kB, subdirectories, a name to quote, one body twice."""
    rng = random.Random(7)
    files = {f"file-{n}.iso": rng.randbytes(rng.randrange(1, 300_000)) for n in range(8)}
    files["empty"] = b""
    files["sub/dir/nested.bin"] = rng.randbytes(5000)
    files["with space ä.txt"] = b"quoted in the URL\n"
    files["copy-of-file-0.iso"] = files["file-0.iso"]
    return files


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """good/ (a valid repository), subset/ (part of it), bad/ (good, then a bad last line), missing/ (a 404)."""
    root = tmp_path_factory.mktemp("tree")
    files = sample_files()
    write_repository(root / "good", files)
    write_repository(root / "subset", dict(list(files.items())[:4]))
    write_repository(root / "bad", files, "x.iso,abc,5\n")
    write_repository(root / "missing", dict(list(files.items())[:5]), manifest_line("gone.iso", b"not on the server"))
    return root


@pytest.fixture(scope="session")
def server(tree: Path) -> Iterator[str]:
    """The fixture server (a child process on 127.0.0.1, loopback profile) serving `tree`; its base URL."""
    with serve_in_background(tree) as running:
        yield running.url


def pytest_configure(config: pytest.Config) -> None:
    """Django on a temp PULP_SYNC_HOME before test modules import the models (Django starts once)."""
    home = Path(tempfile.mkdtemp(prefix="pulp-sync-tests-"))
    config.add_cleanup(partial(shutil.rmtree, home, ignore_errors=True))
    os.environ["PULP_SYNC_HOME"] = str(home)
    pulp_sync.setup()


@pytest.fixture
def db() -> Path:
    """A fresh schema and an empty artifact store for each test (`pulp-sync reset` itself); the home."""
    database.reset()
    return Path(os.environ["PULP_SYNC_HOME"])
