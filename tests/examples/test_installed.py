"""The example plugins under examples/ are installed and listed like the built-ins.

scripts/bootstrap.sh installs each (editable), so ./runtests.sh and CI also run the conformance
suite on them (tests/downloaders/test_conformance.py runs it for every installed downloader).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import downloaders

PLUGINS = {"httpx": "pulp_sync_httpx:HttpxDownloader", "pycurl": "pulp_sync_pycurl:CurlDownloader"}


@pytest.mark.parametrize(("name", "target"), sorted(PLUGINS.items()))
def test_the_plugin_is_installed_as_a_downloader(name: str, target: str) -> None:
    install = f"pip install -e examples/pulp-sync-{name} (scripts/bootstrap.sh does)"
    assert downloaders.available().get(name) == target, f"the example plugin is not installed: {install}"
    assert downloaders.load(name).name == name


def test_pulp_sync_downloaders_lists_them() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "pulp_sync", "downloaders"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()
    for name, target in PLUGINS.items():
        assert f"{name}\t{target}" in listed, listed
