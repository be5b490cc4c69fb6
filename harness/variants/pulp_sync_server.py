"""pulp-sync as a Pulp server: `pulp-sync api` and one `pulp-sync worker`, for a pulp-api variant whose
`server` is "pulp-sync", so that the same driver (harness.variants.pulp_api) times pulpcore and pulp-sync alike.

Like pulpcore under the harness, the service is up for the whole experiment: a fresh schema in its
own state folder and database first (`pulp-sync reset`), an API user with a random password (given
through the environment, never an argument), the API on a free port, one forking RQ worker on the
harness's own queue. Every run then resets through the API, as it does on pulpcore.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from harness import defaults
from harness.errors import HarnessError
from harness.experiment.variant import InlineVariant
from harness.run.child import run_child
from harness.variants import pulp_sync_cli
from harness.variants.databases import create_database, server_database_url
from harness.variants.pulp_api import PulpApi
from harness.variants.workers import QUEUE, running_workers
from pulp_base import servers

__all__ = ["PulpSyncServerFailed", "running_pulp_sync", "USERNAME"]

USERNAME = "bench"
"""The API user the harness creates for itself."""
_QUEUE = f"{QUEUE}-server"
"""The server's own RQ queue: the queue of `tasking = "rq"` variants has their workers, on their database."""
_ANNOUNCED = "Pulp 3 API at "
"""How `pulp-sync api` says where the Pulp dialect listens (pulp_sync/api/server.py)."""


class PulpSyncServerFailed(HarnessError, RuntimeError):
    """`pulp-sync api` or its worker did not come up; the message has what they printed."""


@contextmanager
def running_pulp_sync(state_dir: Path, db: str | None,
                      command: Sequence[str] = defaults.PULP_SYNC_COMMAND) -> Iterator[tuple[PulpApi, tuple[int, ...]]]:
    """The API (as an admin: the harness resets through it) and the worker's pid of a pulp-sync service on
    `db` (a database of its own: harness.variants.databases.server_database_url) with PULP_SYNC_HOME `state_dir`;
    both stopped when the block ends."""
    url = server_database_url(db)
    if url is not None:
        create_database(url)
    env = {**pulp_sync_cli.child_env(InlineVariant("pulp-sync-server", "asyncio", db=url), state_dir),
           "PULP_SYNC_QUEUE": _QUEUE}
    pulp_sync_cli.reset(env, command)
    password = secrets.token_urlsafe(24)
    created = run_child([*command, "createuser", USERNAME, "--admin"], env={**env, "PULP_SYNC_PASSWORD": password},
                        timeout=120)
    if created.returncode != 0:
        raise PulpSyncServerFailed(f"`pulp-sync createuser` failed: {created.stderr.strip()[-500:]}")
    with tempfile.TemporaryFile() as log:
        api = servers.start([*command, "api", "--bind", "127.0.0.1:0", "--workers", "2"], log, env=env)
        try:
            url = servers.wait_until(
                lambda: _announced(log), {"`pulp-sync api`": api}, within=defaults.PULP_SYNC_API_START_SECONDS,
                what="`pulp-sync api` did not announce its address", output=lambda: servers.tail(log),
                failure=PulpSyncServerFailed,
            )
            with running_workers(1, "fork", env, command, _QUEUE) as workers:
                yield PulpApi(url, USERNAME, password), workers.pids
        finally:
            servers.stop_groups([api], defaults.PULP_SYNC_API_STOP_SECONDS)


def _announced(log: IO[bytes]) -> str | None:
    """The base URL gunicorn announces once it listens (what precedes /pulp/api/v3/); None before."""
    log.seek(0)
    for line in log.read().decode(errors="replace").splitlines():
        if line.startswith(_ANNOUNCED):
            return line.removeprefix(_ANNOUNCED).split("/pulp/api/v3/")[0]
    return None

