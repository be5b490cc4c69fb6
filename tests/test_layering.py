"""The data flow of DESIGN.md, enforced: lower layers import nothing from the layers above them.

pulp_base is the ground floor (the manifest format, starting servers): it imports nothing else of ours,
and every other package may import it (the fixture generator writes manifests with it)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

OURS = ("pulp_base", "downloaders", "fixtures", "conformance", "pulp_sync", "harness")
FORBIDDEN = {
    "pulp_base": ("django", *OURS[1:]),
    "downloaders": ("django", "pulp_sync", "harness", "fixtures"),
    "fixtures": ("django", "pulp_sync", "harness", "downloaders"),
    "conformance": ("django", "pulp_sync", "harness"),
}
MODULES = {
    "pulp_base": [
        "pulp_base",
        "pulp_base.manifest",
        "pulp_base.manifest.parse",
        "pulp_base.manifest.write",
        "pulp_base.manifest.urls",
        "pulp_base.servers",
        "pulp_base.private",
    ],
    "downloaders": ["downloaders", "downloaders.asyncio_engine", "downloaders.futures_engine"],
    "fixtures": ["fixtures", "fixtures.generate", "fixtures.server", "fixtures.faults", "fixtures.nginx", "fixtures.cli"],
    "conformance": [
        "conformance",
        "conformance.plugin",
        "conformance.checks",
        "conformance.test_contract",
        "conformance.__main__",
    ],
}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_nothing_from_above(package: str) -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {MODULES[package]!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
    leaked = [m for m in loaded if m.split(".")[0] in FORBIDDEN[package]]
    assert not leaked, f"{package} pulled in {leaked}"
