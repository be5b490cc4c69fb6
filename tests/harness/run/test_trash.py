"""The harness's trash (harness/run/trash.py): trees of many files moved aside whole and deleted only
when emptied; trees of few files deleted at once."""

from __future__ import annotations

from pathlib import Path

from harness.run.trash import Trash


def _tree(root: Path, files: int) -> Path:
    for number in range(files):
        (root / f"d{number % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"d{number % 3}" / f"f{number}").write_bytes(b"x" * number)
    return root


def test_discard_moves_the_tree_whole_and_empty_deletes_it(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash", many_files=1, min_free=0.0)
    store = _tree(tmp_path / "artifacts", 10)
    before = sorted(path.relative_to(store) for path in store.rglob("*"))
    trash.discard(store)
    assert not store.exists()
    (kept,) = list((tmp_path / "trash").iterdir())
    assert sorted(path.relative_to(kept) for path in kept.rglob("*")) == before
    trash.empty()
    assert not (tmp_path / "trash").exists()


def test_a_missing_tree_is_nothing_to_do_and_names_never_collide(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash", many_files=1, min_free=0.0)
    trash.discard(tmp_path / "never-made")
    assert not (tmp_path / "trash").exists()
    (tmp_path / "trash" / "0").mkdir(parents=True)  # left by an earlier, interrupted experiment
    for round_ in range(3):
        trash.discard(_tree(tmp_path / "out", round_ + 1))
    assert sorted(path.name for path in (tmp_path / "trash").iterdir()) == ["0", "1", "2", "3"]
    assert sum(1 for path in (tmp_path / "trash").rglob("f*")) == 1 + 2 + 3


def test_a_disk_running_short_empties_the_trash_at_once(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash", many_files=1, min_free=1.0)  # no disk is ever 100% free
    trash.discard(_tree(tmp_path / "artifacts", 5))
    assert not (tmp_path / "artifacts").exists() and not (tmp_path / "trash").exists()


def test_a_tree_of_few_files_is_deleted_at_once(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash", many_files=5, min_free=0.0)
    trash.discard(_tree(tmp_path / "big-files", 4))
    assert not (tmp_path / "big-files").exists() and not (tmp_path / "trash").exists()
    trash.discard(_tree(tmp_path / "many-files", 5))
    assert not (tmp_path / "many-files").exists() and len(list((tmp_path / "trash").iterdir())) == 1
