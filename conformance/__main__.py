"""`python -m conformance NAME [pytest args]`: the conformance suite alone, against one downloader.

NAME is an installed downloader (`pulp-sync downloaders` lists them) or module:Class; the other
arguments go to pytest as they are (`-x`, `-k timeout`, `-v`, ...). The exit status is pytest's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conformance import CONTRACT_MODULE, OPTION, names_contract
from downloaders.registry import available

USAGE = "usage: python -m conformance NAME [pytest arguments]\n  NAME: an installed downloader ({}) or module:Class"


def main(argv: list[str]) -> int:
    """Run the suite against the downloader argv names; -h or --help prints the usage (exit 0), no name
    prints it as an error (exit 2)."""
    usage = USAGE.format(", ".join(available()) or "none installed")
    if argv[:1] in (["-h"], ["--help"]):
        print(usage)
        return 0
    if not argv or argv[0].startswith("-"):
        print(usage, file=sys.stderr)
        return 2
    name, rest = argv[0], argv[1:]
    # Without pytest's plugin autoloading, the plugin must be named; with it, naming it twice is an error.
    plugin = ["-p", "conformance.plugin"] if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") else []
    # The contract by its module's name, not its path: pytest then finds the rootdir and the configuration
    # from where the author runs it (their plugin's pyproject.toml, its cache there), as a plain `pytest`
    # does, rather than pulp-sync's, the folder the contract's path lies in.
    suite = [] if names_contract(rest, Path.cwd(), "--pyargs" in rest) else ["--pyargs", CONTRACT_MODULE]
    return int(pytest.main([*plugin, *suite, f"{OPTION}={name}", *rest]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
