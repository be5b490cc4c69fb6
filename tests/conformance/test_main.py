"""`python -m conformance`, run as a plugin author runs it: from the plugin's folder, under the plugin's own
pytest configuration, writing nothing into pulp-sync's tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from conformance.template import PluginNames
from pulp_sync.cli import cli
from tests.conformance.running import REPO, SUITE_TIMEOUT


def _tree(root: Path) -> dict[str, float]:
    """Every file and folder under pulp-sync's checkout, with its time of change (git's and virtualenvs'
    own bookkeeping aside)."""
    skipped = {".git", ".venv", ".venv-pulpcore"}
    found = {}
    for path in root.iterdir():
        if path.name in skipped:
            continue
        found[str(path)] = path.stat().st_mtime
        if path.is_dir():
            found |= {str(inner): inner.stat().st_mtime for inner in path.rglob("*")}
    return found


def test_the_suite_runs_under_the_plugins_own_configuration(tmp_path: Path) -> None:
    made = CliRunner().invoke(cli, ["plugin", "new", "my-engine", "--directory", str(tmp_path)], prog_name="pulp-sync")
    assert made.exit_code == 0, made.output
    names = PluginNames("my-engine")
    folder = tmp_path / names.distribution
    config = folder / "pyproject.toml"  # not installed here: its addopts would name the entry point it lacks
    config.write_text(config.read_text().replace(' --pulp-sync-downloader=my-engine"', '"'))
    before = _tree(REPO)
    done = subprocess.run(
        [sys.executable, "-m", "conformance", f"{names.module}:{names.cls}", "-k", "is_a_downloader"],
        cwd=folder, env={**os.environ, "PYTHONPATH": str(folder)}, capture_output=True, text=True,
        timeout=SUITE_TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"rootdir: {folder}\nconfigfile: pyproject.toml\n" in done.stdout, done.stdout
    assert (folder / ".pytest_cache").is_dir(), "pytest's cache is the plugin's, beside its configuration"
    assert _tree(REPO) == before, "nothing under pulp-sync's tree was written"
