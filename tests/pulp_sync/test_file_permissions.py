"""Files that hold secrets are their owner's alone, whatever the umask: the sqlite database (remote passwords,
session keys) with its -wal and -shm, the copy a reset makes of the migrated template, the secret key, and
PULP_SYNC_HOME itself. An installation made before is tightened on its first use, with one line saying so.
Each in a real `pulp-sync` process with a PULP_SYNC_HOME of its own, as an operator starts one."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pulp_sync import database
from pulp_sync.errors import ConfigurationError

PULP_SYNC = [sys.executable, "-m", "pulp_sync"]
UMASKS = [0o022, 0o000]
"""The usual umask, and one that lets everybody read and write whatever a process creates."""
SECRETS = ["db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm", "secret_key"]
"""What a command leaves in a new PULP_SYNC_HOME that holds secrets (a process ends without closing sqlite,
so its -wal and -shm stay, as after a crash)."""


def pulp_sync(home: Path, *arguments: str, umask: int = 0o022, **env: str) -> subprocess.CompletedProcess[str]:
    """`pulp-sync ARGUMENTS` with PULP_SYNC_HOME `home`, sqlite unless `env` names a DATABASE_URL; succeeded."""
    environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PULP_SYNC_SECRET_KEY")}
    environment.update(PULP_SYNC_HOME=str(home), **env)
    done = subprocess.run([*PULP_SYNC, *arguments], env=environment, umask=umask, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", UMASKS, ids=oct)
def test_a_new_installation_is_owner_only(tmp_path: Path, umask: int) -> None:
    home = tmp_path / "home"
    done = pulp_sync(home, "repositories", umask=umask)

    assert {name: oct(mode(home / name)) for name in SECRETS} == {name: "0o600" for name in SECRETS}
    assert mode(home) == 0o700
    assert done.stderr == "", "nothing to tighten in a new installation"


@pytest.mark.parametrize("umask", UMASKS, ids=oct)
def test_a_reset_copies_the_template_owner_only(tmp_path: Path, umask: int) -> None:
    """The first reset migrates a new database and copies it as the template; the next ones copy the
    template back over the database: every copy is the owner's alone."""
    for _ in range(2):
        pulp_sync(tmp_path, "reset", "--yes", umask=umask)
        (template,) = tmp_path.glob("db.sqlite3.template-*")
        assert (oct(mode(tmp_path / "db.sqlite3")), oct(mode(template))) == ("0o600", "0o600")


def test_a_database_elsewhere_is_owner_only_and_its_folder_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    pulp_sync(tmp_path / "home", "repositories", umask=0o000, DATABASE_URL=f"sqlite:///{folder / 'pulp.db'}")

    assert {path.name: oct(mode(path)) for path in folder.iterdir() if path.is_file()} == {
        "pulp.db": "0o600", "pulp.db-wal": "0o600", "pulp.db-shm": "0o600"}
    assert mode(folder) == 0o755, "a folder of the operator's: pulp-sync's files in it are private, not the folder"


def test_a_database_it_cannot_create_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "pulp.db"
    environment = {k: v for k, v in os.environ.items() if k != "PULP_SYNC_SECRET_KEY"}
    environment.update(PULP_SYNC_HOME=str(tmp_path / "home"), DATABASE_URL=f"sqlite:///{missing}")
    done = subprocess.run([*PULP_SYNC, "repositories"], env=environment, capture_output=True, text=True, timeout=120)

    assert done.returncode == 1
    assert done.stderr == (f"Error: cannot create the sqlite database {missing} (No such file or directory): "
                           "give a path in a folder pulp-sync may write (DATABASE_URL=sqlite:////path), "
                           "or unset DATABASE_URL\n")


def test_an_existing_installation_is_tightened_on_first_use_with_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pulp_sync(home, "repositories")
    for name in SECRETS:
        (home / name).chmod(0o644)  # as an installation made before files were private
    home.chmod(0o755)

    done = pulp_sync(home, "repositories")

    assert {name: oct(mode(home / name)) for name in SECRETS} == {name: "0o600" for name in SECRETS}
    assert mode(home) == 0o700
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("pulp-sync: made owner-only, as other users could read them: ")
    assert all(f"{home / name} (was 0644)" in done.stderr for name in SECRETS), done.stderr
    assert f"{home} (was 0755)" in done.stderr
    assert pulp_sync(home, "repositories").stderr == "", "said once: the next start finds nothing to tighten"


def test_a_shared_sticky_home_keeps_its_mode(tmp_path: Path) -> None:
    """PULP_SYNC_HOME=/tmp would make /tmp its owner's alone: a sticky folder is shared by design."""
    home = tmp_path / "shared"
    home.mkdir()
    home.chmod(0o1777)
    pulp_sync(home, "repositories", umask=0o000)

    assert mode(home) == 0o1777
    assert {name: oct(mode(home / name)) for name in SECRETS} == {name: "0o600" for name in SECRETS}


def test_a_file_it_cannot_tighten_is_one_line_that_says_what_to_do(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user's file (only root may change its mode): refused, rather than used as it is."""
    tmp_path.chmod(0o700)
    shared = tmp_path / "db.sqlite3"
    shared.write_bytes(b"")
    shared.chmod(0o644)

    def refused(path: object, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted", str(path))

    monkeypatch.setattr(os, "chmod", refused)
    with pytest.raises(ConfigurationError) as raised:
        database._tighten(tmp_path, shared)
    assert str(raised.value) == (f"{shared} may be read by other users and pulp-sync cannot make it owner-only "
                                 "(Operation not permitted): run pulp-sync as its owner, or have the owner run "
                                 f"`chmod go= {shared}`")
