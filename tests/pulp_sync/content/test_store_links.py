"""The store's boundaries: a store that is itself a symbolic link (moved to a bigger disk) is reset like any
other, and a link found inside the store is never followed: verify --repair removes the link, never
what it points at."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pulp_sync.content.store import artifact_store
from tests.pulp_sync.content.test_verify import some_artifact, synced, verify
from tests.pulp_sync.test_cli import invoke


@pytest.fixture
def linked_store(db: Path, tmp_path: Path) -> Iterator[Path]:
    """The store's root made a link to a folder elsewhere (the "bigger disk"); that folder. Put back after."""
    root = artifact_store().root
    elsewhere = tmp_path / "bigger-disk"
    shutil.rmtree(root, ignore_errors=True)
    elsewhere.mkdir()
    root.symlink_to(elsewhere, target_is_directory=True)
    try:
        yield elsewhere
    finally:
        root.unlink()
        root.mkdir()


def test_reset_empties_a_store_that_is_a_link(linked_store: Path, server: str) -> None:
    synced(server)
    assert list((linked_store / "artifact").rglob("*")), "the sync wrote through the link"

    result = invoke("reset", "--yes")

    assert result.exit_code == 0, result.output
    assert artifact_store().root.is_symlink(), "the link is kept, as the operator made it"
    assert list(linked_store.iterdir()) == []


def test_repair_removes_a_link_inside_the_store_and_nothing_it_points_at(db: Path, server: str, tmp_path: Path) -> None:
    synced(server)
    store = artifact_store()
    artifact = some_artifact()
    folder = store.path_for(artifact.sha256).parent
    outside = tmp_path / "outside"
    shutil.copytree(folder, outside)
    (outside / "precious.txt").write_text("not the store's")
    damaged = outside / store.path_for(artifact.sha256).name
    damaged.write_bytes(b"damaged")
    shutil.rmtree(folder)
    folder.symlink_to(outside, target_is_directory=True)
    before = {path.name: path.read_bytes() for path in outside.iterdir()}

    status, found = verify()
    assert status == 1 and artifact.sha256 in found["missing"] and found["corrupt"] == []
    assert str(folder) in found["orphans"], "the link is reported, as nothing of the store's"
    status, repaired = verify("--repair")

    assert not folder.exists() and not folder.is_symlink(), "the link is gone"
    assert {path.name: path.read_bytes() for path in outside.iterdir()} == before, "nothing outside was touched"
    assert invoke("sync", server + "good/PULP_MANIFEST", "--repository", "good").exit_code == 0
    assert verify()[0] == 0 and store.holds(store.path_for(artifact.sha256))
