"""The machine set-up: the shell scripts parse (and pass shellcheck when it is installed), the
Vagrantfile is valid Ruby that provisions with scripts/provision.sh, and bootstrap explains a
missing build dependency of the MariaDB driver instead of failing inside pip."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(
    [
        ROOT / ".ci" / "run",
        ROOT / "runtests.sh",
        ROOT / "manytests.sh",
        *(ROOT / "scripts").glob("*.sh"),
        *(ROOT / "experiments").glob("*.sh"),
    ]
)


def run(*command: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command in the project's root, its output captured as text."""
    arguments = [str(part) for part in command]
    return subprocess.run(arguments, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_script_parses(script: Path) -> None:
    checked = run("bash", "-n", script)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_script_passes_shellcheck(script: Path) -> None:
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed")
    checked = run("shellcheck", "--shell=bash", "--external-sources", script)
    assert checked.returncode == 0, checked.stdout


def test_vagrantfile_is_ruby_that_provisions_with_the_script() -> None:
    assert shutil.which("ruby"), "ruby is missing: scripts/provision.sh installs it"
    checked = run("ruby", "-c", ROOT / "Vagrantfile")
    assert checked.returncode == 0 and checked.stdout.strip() == "Syntax OK", checked.stderr
    vagrantfile = (ROOT / "Vagrantfile").read_text(encoding="utf-8")
    assert 'config.vm.box = "debian/bookworm64"' in vagrantfile
    assert "/vagrant/scripts/provision.sh" in vagrantfile and (ROOT / "scripts" / "provision.sh").is_file()
    assert 'forwarded_port", guest: 8000, host: 8000' in vagrantfile


def test_bootstrap_names_the_fix_when_mysqlclient_cannot_build(tmp_path: Path) -> None:
    """A venv installed earlier without the `mysql` extra, on a machine without pkg-config: bootstrap
    says what is missing and which script installs it, and carries on."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    stamp = venv / ".pulp-sync-installed"
    stamp.write_text("test,postgres\n")
    later = time.time() + 3600
    os.utime(stamp, (later, later))  # newer than setup.py: nothing to reinstall
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("dirname", "cat", "paste", "sed"):
        (tools / tool).symlink_to(shutil.which(tool))  # type: ignore[arg-type]

    env = {"PATH": str(tools), "PULP_SYNC_VENV": str(venv), "HOME": str(tmp_path)}
    done = run("/bin/bash", "-c", 'source scripts/bootstrap.sh && echo "ready: $PYTHON"', env=env)

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"ready: {venv}/bin/python\n"
    assert "Not installing the MariaDB driver (mysqlclient): building it needs" in done.stderr
    assert "pkg-config, libmariadb-dev." in done.stderr and "To fix: scripts/provision.sh" in done.stderr
    assert "Installing" not in done.stderr
