"""pulp_base.private: owner-only files whatever the umask, and what an earlier start left readable tightened.
pulp-sync's own files are tested through its commands (tests/pulp_sync/test_file_permissions.py)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from pulp_base import private


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """A umask that lets everybody read and write whatever this process creates."""
    before = os.umask(0o000)
    yield
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("permissive_umask")
def test_a_log_opened_with_the_opener_is_owner_only_new_or_left_by_an_earlier_start(tmp_path: Path) -> None:
    new, earlier = tmp_path / "new.log", tmp_path / "earlier.log"
    earlier.write_bytes(b"a secret in an old log\n")
    earlier.chmod(0o644)
    for log in (new, earlier):
        with open(log, "wb", opener=private.owner_only) as file:
            file.write(b"line\n")

    assert (oct(mode(new)), oct(mode(earlier)), earlier.read_bytes()) == ("0o600", "0o600", b"line\n")


@pytest.mark.usefixtures("permissive_umask")
def test_made_and_copied_files_and_a_made_folder_are_owner_only(tmp_path: Path) -> None:
    folder = tmp_path / "home" / "private"
    private.make_directory(folder)
    private.create(folder / "db")
    private.copy(folder / "db", tmp_path / "copy")

    assert [oct(mode(path)) for path in (folder, folder / "db", tmp_path / "copy")] == ["0o700", "0o600", "0o600"]


def test_tighten_keeps_the_owners_bits_and_names_what_it_changed(tmp_path: Path) -> None:
    script, kept, sticky = tmp_path / "script", tmp_path / "kept", tmp_path / "sticky"
    for path, bits in ((script, 0o775), (kept, 0o600)):
        path.write_bytes(b"")
        path.chmod(bits)
    sticky.mkdir()
    sticky.chmod(0o1777)

    assert private.tighten([script, kept, sticky, tmp_path / "missing"]) == [f"{script} (was 0775)"]
    assert (oct(mode(script)), oct(mode(kept)), oct(mode(sticky))) == ("0o700", "0o600", "0o1777")
