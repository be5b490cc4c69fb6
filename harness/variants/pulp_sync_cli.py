"""The one place that knows pulp-sync's command line: reset and sync, each in a fresh child process.

The harness never imports pulp_sync: a run measures the product as an operator starts it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import defaults
from harness.errors import HarnessError
from harness.experiment.variant import PulpSyncVariant, RqVariant, Variant
from harness.run.child import ChildRun, last_words, run_child
from harness.variants.databases import database_url
from harness.variants.workers import QUEUE
from pulp_base.download_processes import parse_processes, processes_text

__all__ = ["ResetFailed", "child_env", "reset", "sync", "sync_arguments", "remote_arguments", "installed_downloaders"]

_SECRET_VARIABLE = "PULP_SYNC_BENCH_{}"
"""The sync child's environment variables that carry its secrets and headers (`--password-env` and
the like): a process's environment is readable by its user alone, its arguments by everyone."""



class ResetFailed(HarnessError, RuntimeError):
    """`pulp-sync reset` failed: every later run would measure a dirty state, so the experiment stops."""


def child_env(variant: Variant, state_dir: Path) -> dict[str, str]:
    """The environment of `variant`'s children: its own PULP_SYNC_HOME, its database, the harness's
    own RQ queue, its extra vars.

    DATABASE_URL comes from the variant's `db` (see harness.variants.databases); without one, an inherited
    DATABASE_URL is dropped so that the default (sqlite in the state folder) is what runs, never the
    operator's own database.
    """
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    env["PULP_SYNC_HOME"] = str(state_dir.resolve())
    url = database_url(variant.database)
    if url:
        env["DATABASE_URL"] = url
    if isinstance(variant, RqVariant):
        env["PULP_SYNC_QUEUE"] = QUEUE
    env.update(variant.env)
    return env


def reset(env: dict[str, str], command: Sequence[str] = defaults.PULP_SYNC_COMMAND) -> ChildRun:
    """`pulp-sync reset --yes`: fresh schema, empty store (the seed's pclean + rm of the artifacts)."""
    done = run_child([*command, "reset", "--yes"], env=env, timeout=defaults.RESET_SECONDS)
    if done.returncode != 0:
        said = last_words(done.stderr, done.returncode)
        raise ResetFailed(
            f"`pulp-sync reset --yes` failed ({said}) with PULP_SYNC_HOME={env.get('PULP_SYNC_HOME')}; "
            "fix it, then continue with `--resume`"
        )
    return done


def sync(url: str, variant: PulpSyncVariant, env: dict[str, str], timeout: float,
         command: Sequence[str] = defaults.PULP_SYNC_COMMAND, settings: Mapping[str, Any] | None = None,
         manifest_file: Path | None = None, repository: str = defaults.REPOSITORY) -> ChildRun:
    """`pulp-sync sync URL --json` (sync_arguments) run to its end."""
    arguments, secrets = sync_arguments(url, variant, settings, command, manifest_file, repository)
    return run_child(arguments, env={**env, **secrets}, timeout=timeout)


def sync_arguments(url: str, variant: PulpSyncVariant, settings: Mapping[str, Any] | None = None,
                   command: Sequence[str] = defaults.PULP_SYNC_COMMAND, manifest_file: Path | None = None,
                   repository: str = defaults.REPOSITORY) -> tuple[list[str], dict[str, str]]:
    """`pulp-sync sync URL --json` into `repository` with the variant's downloader, its Remote `settings`
    (resolved; its concurrency when None), processes and tasking, the manifest's lines from `manifest_file`
    if given; and the environment variables that carry its secrets."""
    options, secrets = remote_arguments(settings or {"download_concurrency": variant.download_concurrency})
    arguments = [
        *command,
        "sync",
        url,
        "--repository",
        repository,
        "--downloader",
        variant.downloader,
        *options,
        *(["--manifest-file", str(manifest_file.resolve())] if manifest_file is not None else []),
        *(["--tasking", "rq"] if isinstance(variant, RqVariant) else []),
        "--processes",
        processes_text(parse_processes(variant.processes)),
        *variant.sync_args,
        "--json",
    ]
    return arguments, secrets


def remote_arguments(settings: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """`pulp-sync sync` options for resolved Remote settings, and the environment variables that carry
    the secrets and header values those options name: nothing secret is ever an argument."""
    from downloaders.settings import remote_setting

    options: list[str] = []
    secrets: dict[str, str] = {}
    for name, value in settings.items():
        setting = remote_setting(name)
        flag = setting.flag
        if setting.kind is dict:
            for number, (header, text) in enumerate(value.items()):
                variable = _SECRET_VARIABLE.format(f"HEADER_{number}")
                secrets[variable] = text
                options += ["--header-env", f"{header}={variable}"]
        elif setting.secret and setting.kind is str:
            variable = _SECRET_VARIABLE.format(name.upper())
            secrets[variable] = str(value)
            options += [flag + "-env", variable]
        elif setting.secret:
            options += [flag + "-file", str(value)]
        elif setting.kind is bool:
            options.append(flag if value else flag.replace("--", "--no-", 1))
        else:
            options += [flag, str(value)]
    return options, secrets


def installed_downloaders() -> dict[str, str]:
    """Downloaders installed as entry points (the same list `pulp-sync downloaders` prints)."""
    from downloaders.registry import available

    return available()
