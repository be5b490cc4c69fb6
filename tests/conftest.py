"""What the tests of different modules share machine-wide, held by one module at a time.

runtests.sh spreads the suite over pytest-xdist's workers by file (`--dist loadfile`): a module's tests
run one after another on one worker, as they were written, and its servers and API stacks
(module-scoped fixtures) start once. Modules that use something of the machine's under a fixed name
say so with `pytest.mark.machine_wide(NAME)`, and hold a lock on it (flock on a file in the temporary
directory, released if the worker dies) from before their first fixture to after their last test:

- `hosts`: the network namespaces, bridge and forwarders of scripts/hosts.sh.
- `pulpcore`: pulpcore's own PostgreSQL database, `pulpcore` (harness/variants/pulpcore.py).
"""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest


@pytest.fixture(scope="module", autouse=True)
def _machine_wide(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each lock the module's `machine_wide` marks name, in one order (no two modules wait on each other)."""
    names = sorted({mark.args[0] for mark in request.node.iter_markers("machine_wide")})
    with ExitStack() as held:
        for name in names:
            file = held.enter_context((Path(tempfile.gettempdir()) / f"pulp-sync-tests-{name}.lock").open("a"))
            fcntl.flock(file.fileno(), fcntl.LOCK_EX)  # closing the file releases it
        yield
