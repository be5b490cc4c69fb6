"""The one place that knows pulp-sync's command line: reset and sync, each in a fresh child process.

The harness never imports pulp_sync: a run measures the product as an operator starts it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from harness import defaults
from harness.child import ChildRun, run_child
from harness.databases import database_url
from harness.workers import QUEUE
from harness.errors import HarnessError
from harness.spec import Variant

__all__ = ["ResetFailed", "child_env", "reset", "sync", "installed_downloaders"]

_RESET_TIMEOUT = 600.0
"""Seconds a reset may take (a large store on a slow disk) before the experiment stops."""


class ResetFailed(HarnessError, RuntimeError):
    """`pulp-sync reset` failed: every later run would measure a dirty state, so the experiment stops."""


def child_env(variant: Variant, state_dir: Path) -> dict[str, str]:
    """The environment of `variant`'s children: its own PULP_SYNC_HOME, its database, the harness's
    own RQ queue, its extra vars.

    DATABASE_URL comes from the variant's `db` (see harness.databases); without one, an inherited
    DATABASE_URL is dropped so that the default (sqlite in the state folder) is what runs, never the
    operator's own database.
    """
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    env["PULP_SYNC_HOME"] = str(state_dir.resolve())
    url = database_url(variant.db)
    if url:
        env["DATABASE_URL"] = url
    if variant.tasking == "rq":
        env["PULP_SYNC_QUEUE"] = QUEUE
    env.update(variant.env)
    return env


def reset(env: dict[str, str], command: Sequence[str] = defaults.PULP_SYNC_COMMAND) -> ChildRun:
    """`pulp-sync reset --yes`: fresh schema, empty store (the seed's pclean + rm of the artifacts)."""
    done = run_child([*command, "reset", "--yes"], env=env, timeout=_RESET_TIMEOUT)
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.returncode}"
        raise ResetFailed(
            f"`pulp-sync reset --yes` failed ({said}) with PULP_SYNC_HOME={env.get('PULP_SYNC_HOME')}; "
            "fix it, then continue with `--resume`"
        )
    return done


def sync(url: str, variant: Variant, env: dict[str, str], timeout: float,
         command: Sequence[str] = defaults.PULP_SYNC_COMMAND) -> ChildRun:
    """`pulp-sync sync URL --json` with the variant's downloader, concurrency and tasking, to its end."""
    arguments = [
        *command,
        "sync",
        url,
        "--repository",
        defaults.REPOSITORY,
        "--downloader",
        variant.downloader,
        "--concurrency",
        str(variant.download_concurrency),
        *(["--tasking", "rq"] if variant.tasking == "rq" else []),
        *variant.sync_args,
        "--json",
    ]
    return run_child(arguments, env=env, timeout=timeout)


def installed_downloaders() -> dict[str, str]:
    """Downloaders installed as entry points (the same list `pulp-sync downloaders` prints)."""
    from downloaders.registry import available

    return available()
