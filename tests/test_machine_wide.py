"""A module marked `machine_wide` holds its lock while its tests run (tests/conftest.py), so another
worker's module that uses the same thing of the machine waits for it."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.machine_wide("self-test")

_TRY_LOCK = "import fcntl, sys; file = open(sys.argv[1], 'a'); fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)"


def test_the_module_holds_its_lock_while_it_runs() -> None:
    lock = Path(tempfile.gettempdir()) / "pulp-sync-tests-self-test.lock"
    other = subprocess.run([sys.executable, "-c", _TRY_LOCK, str(lock)], capture_output=True, text=True, timeout=60)
    assert other.returncode != 0 and "BlockingIOError" in other.stderr, other.stderr
