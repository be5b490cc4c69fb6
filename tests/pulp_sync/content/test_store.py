"""ArtifactStore: content-addressed layout, digest validation, atomic adoption, clean workspaces."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pulp_sync.content.store import ArtifactStore

BODY = b"artifact body"
DIGEST = hashlib.sha256(BODY).hexdigest()


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(tmp_path / "artifacts")


def temp_file(store: ArtifactStore, body: bytes = BODY) -> Path:
    path = store.temp_dir / f"download-{len(list(store.temp_dir.iterdir()))}.part"
    path.write_bytes(body)
    return path


def test_layout(store: ArtifactStore) -> None:
    assert store.path_for(DIGEST) == store.root / "artifact" / DIGEST[:2] / DIGEST[2:]
    assert store.relative_path_for(DIGEST) == f"artifact/{DIGEST[:2]}/{DIGEST[2:]}"
    assert store.temp_dir == store.root / "tmp" and store.temp_dir.is_dir()


@pytest.mark.parametrize("digest", [DIGEST.upper(), DIGEST[:-1], DIGEST + "0", "../" + DIGEST[3:], "g" * 64, ""])
def test_refuses_what_is_not_a_digest(store: ArtifactStore, digest: str) -> None:
    with pytest.raises(ValueError, match="not a sha256 digest"):
        store.path_for(digest)


def test_adopt_renames_into_place(store: ArtifactStore) -> None:
    download = temp_file(store)
    inode = download.stat().st_ino
    target = store.adopt(download, DIGEST)
    assert target == store.path_for(DIGEST)
    assert target.stat().st_ino == inode, "moved by rename (atomic), not copied"
    assert not download.exists()
    with store.open(DIGEST) as stored:
        assert stored.read() == BODY


def test_adopt_dedupes(store: ArtifactStore) -> None:
    first = store.adopt(temp_file(store), DIGEST)
    second = temp_file(store)
    assert store.adopt(second, DIGEST) == first
    assert first.read_bytes() == BODY and not second.exists()
    assert [path for path, _ in store.stored_files()] == [first]


@pytest.mark.parametrize("damaged", [b"truncat", b"x" * len(BODY)], ids=["shorter", "same size"])
def test_adopt_replaces_a_damaged_file(store: ArtifactStore, damaged: bytes) -> None:
    target = store.path_for(DIGEST)
    target.parent.mkdir(parents=True)
    target.write_bytes(damaged)
    store.adopt(temp_file(store), DIGEST)
    assert target.read_bytes() == BODY


def test_adopt_with_fsync(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "artifacts", fsync=True)
    assert store.adopt(temp_file(store), DIGEST).read_bytes() == BODY


def test_workspace_is_removed_even_on_error(store: ArtifactStore) -> None:
    with pytest.raises(RuntimeError), store.workspace() as workspace:
        assert workspace.parent == store.temp_dir
        (workspace / "left-behind.part").write_bytes(b"x")
        raise RuntimeError("sync failed")
    assert not workspace.exists()
    assert list(store.temp_dir.iterdir()) == []


def test_remove_all(store: ArtifactStore) -> None:
    store.adopt(temp_file(store), DIGEST)
    store.remove_all()
    assert list(store.root.iterdir()) == [], "the root stays (it may be a link the operator made), empty"
