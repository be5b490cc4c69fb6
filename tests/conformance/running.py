"""Running the conformance suite in a child process, as a plugin author would, and reading its verdict."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root, where `tests.conformance.broken` can be imported from."""
SUITE_TIMEOUT = 900
"""Seconds one child run of the suite may take: about a minute per downloader on an idle machine."""
CHANGING_LIMIT_TESTS = 3
"""The suite's tests of rule 24 (a changing limit), skipped for a downloader that keeps a fixed limit."""
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?)\b")


@dataclass(frozen=True)
class SuiteRun:
    """A finished child pytest: its exit status, its output, and the counts of its summary line."""

    returncode: int
    output: str

    @property
    def counts(self) -> dict[str, int]:
        summary = self.output.strip().splitlines()[-1] if self.output.strip() else ""
        return {("error" if word.startswith("error") else word): int(n) for n, word in _COUNT.findall(summary)}

    def tail(self, lines: int = 60) -> str:
        """The end of the output, for an assertion message."""
        return "\n".join(self.output.splitlines()[-lines:])


def run_suite(
    command: Sequence[str], tmp_path: Path, cwd: Path | None = None, pythonpath: Sequence[Path] = ()
) -> SuiteRun:
    """`python COMMAND` with pytest's temp files under tmp_path and no cache, `pythonpath` in front of sys.path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    arguments = [sys.executable, *command, "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'basetemp'}"]
    done = subprocess.run(
        arguments,
        cwd=cwd or tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=SUITE_TIMEOUT,
    )
    return SuiteRun(done.returncode, done.stdout)
