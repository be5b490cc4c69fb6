"""The data flow of DESIGN.md, enforced: lower layers import nothing from the layers above them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORBIDDEN = {
    "downloaders": ("django", "pulp_sync", "harness", "fixtures"),
    "fixtures": ("django", "pulp_sync", "harness", "downloaders"),
    "conformance": ("django", "pulp_sync", "harness"),
}
MODULES = {
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
