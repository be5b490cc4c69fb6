"""A results folder is one mode, the umask's, for every file in it: it holds no secret, and a colleague or a
web server that can read its plots can read its report too."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from harness.report.render import render

RECORDED = Path(__file__).resolve().parents[2] / "docs" / "recorded" / "main-job"


def test_every_file_of_a_rendered_folder_has_the_umasks_mode(tmp_path: Path) -> None:
    folder = tmp_path / "main-job"
    shutil.copytree(RECORDED, folder)
    previous = os.umask(0o022)
    try:
        render(folder)
    finally:
        os.umask(previous)
    modes = {path.name: oct(path.stat().st_mode & 0o777) for path in folder.iterdir() if path.is_file()}
    assert {"summary.md", "report.html", "sync_time.png"} <= set(modes)
    assert set(modes.values()) == {oct(0o644)}, modes
