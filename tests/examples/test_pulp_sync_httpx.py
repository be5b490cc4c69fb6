"""The example plugin under examples/pulp-sync-httpx is installed and listed like a built-in.

scripts/bootstrap.sh installs it (editable), so ./runtests.sh and CI also run the conformance
suite on it (tests/downloaders/test_conformance.py runs it for every installed downloader).
"""

from __future__ import annotations

import subprocess
import sys

import downloaders

INSTALL = "pip install -e examples/pulp-sync-httpx (scripts/bootstrap.sh does)"


def test_the_httpx_plugin_is_installed_as_a_downloader() -> None:
    installed = downloaders.available()
    assert installed.get("httpx") == "pulp_sync_httpx:HttpxDownloader", (
        f"the example plugin is not installed: {INSTALL}"
    )
    assert downloaders.load("httpx").name == "httpx"


def test_pulp_sync_downloaders_lists_it() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "pulp_sync", "downloaders"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "httpx\tpulp_sync_httpx:HttpxDownloader" in listed.splitlines(), listed
