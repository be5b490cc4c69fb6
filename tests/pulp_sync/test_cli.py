"""The `pulp-sync` command line, driven for real: in a subprocess, and in-process with click's runner."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from downloaders import available
from pulp_sync import defaults
from pulp_sync.cli import cli
from pulp_sync.models import Artifact, Remote, Repository, RepositoryVersion

PULP_SYNC = Path(sys.executable).parent / "pulp-sync"


def pulp_sync(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PULP_SYNC_HOME": str(home)}
    return subprocess.run([str(PULP_SYNC), *args], capture_output=True, text=True, env=env, timeout=60)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="pulp-sync")


def _commands(group: click.Group, ctx: click.Context, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of every command under `group`, mounted ones (bench, fixtures, plugin) and their own too."""
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from _commands(command, click.Context(command, parent=ctx, info_name=name), (*path, name))


def test_every_command_takes_h_for_help() -> None:
    """-h wherever --help works, as most command lines take it: the same page, exit 0."""
    paths = [(), *_commands(cli, click.Context(cli, info_name="pulp-sync"))]
    assert {("bench", "run"), ("fixtures", "serve"), ("plugin",), ("sync",)} <= set(paths)
    for path in paths:
        short, long = invoke(*path, "-h"), invoke(*path, "--help")
        assert (short.exit_code, short.stdout) == (0, long.stdout), path
        assert long.stdout.startswith("Usage: pulp-sync"), path


def test_sync_json_in_a_subprocess(server: str, tmp_path: Path) -> None:
    url = server + "good/PULP_MANIFEST"
    first = pulp_sync(tmp_path, "sync", url, "--json", "--downloader", "futures", "--concurrency", "3")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["repository"] == "good" and report["version"] == 1 and report["downloader"] == "futures"
    assert (report["artifacts_downloaded"], report["artifacts_skipped"], report["content_units"]) == (11, 0, 12)
    assert report["concurrency"] == 3 and report["bytes_downloaded"] > 0 and report["seconds"] > 0

    again = json.loads(pulp_sync(tmp_path, "sync", url, "--json").stdout)
    assert (again["version"], again["artifacts_downloaded"], again["artifacts_skipped"]) == (None, 0, 11)
    assert (again["downloader"], again["concurrency"]) == ("futures", 3), "the remote keeps its settings"


def test_downloaders_lists_the_built_in_ones(tmp_path: Path) -> None:
    listed = pulp_sync(tmp_path, "downloaders")
    assert listed.returncode == 0, listed.stderr
    assert "asyncio\tdownloaders.asyncio_engine:AsyncioDownloader" in listed.stdout
    assert "futures\tdownloaders.futures_engine:FuturesDownloader" in listed.stdout
    as_json = json.loads(pulp_sync(tmp_path, "downloaders", "--json").stdout)
    assert {"name": "asyncio", "target": "downloaders.asyncio_engine:AsyncioDownloader"} in as_json


def test_sync_prints_one_summary_line(db: Path, server: str) -> None:
    result = invoke("sync", server + "good/PULP_MANIFEST")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 1
    assert result.stdout.startswith("Synced good version 1: 11 artifacts downloaded, 0 skipped, ")
    assert result.stdout.rstrip().endswith("MB/s) with asyncio x10")


def test_piped_a_long_sync_prints_a_progress_line_every_few_seconds(
        db: Path, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a terminal (a pipe, a CI log): a line every PROGRESS_LINE_SECONDS, here shortened, then the summary."""
    monkeypatch.setattr(defaults, "PROGRESS_LINE_SECONDS", 0.05)
    result = invoke("sync", server + "good/PULP_MANIFEST", "--rate-limit", "10", "--concurrency", "1")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines and all(re.fullmatch(r"Downloading: \d+/11 artifacts, [\d.]+ of [\d.]+ MB \(\d+%\), "
                                      r"[\d.]+ MB/s, \d+ s", line) for line in lines), lines
    assert result.stdout.startswith("Synced good version 1: 11 artifacts downloaded")


def test_the_downloader_is_a_choice_of_the_installed_ones(db: Path, server: str) -> None:
    """A usage error (exit status 2) naming every installed downloader, the nearest one for a typo; nothing saved."""
    installed = ", ".join(repr(name) for name in available())
    typo = invoke("sync", server + "good/PULP_MANIFEST", "--downloader", "asyncoi")
    assert typo.exit_code == 2 and typo.stdout == ""
    assert typo.stderr.splitlines()[-1] == (f"Error: Invalid value for '--downloader': 'asyncoi' is not one of "
                                            f"{installed}; did you mean 'asyncio'?")
    unknown = invoke("sync", server + "good/PULP_MANIFEST", "--downloader", "nope")
    assert unknown.exit_code == 2
    assert unknown.stderr.splitlines()[-1] == (f"Error: Invalid value for '--downloader': 'nope' is not one of "
                                               f"{installed}.")
    assert not Remote.objects.exists(), "a bad setting is not saved"
    shown = invoke("sync", "--help")
    assert f"--downloader [{'|'.join(available())}]" in shown.stdout


@pytest.mark.parametrize(("given", "why"), [
    ("0", "download_concurrency must be from 1 to 256, not 0"),
    ("-1", "download_concurrency must be from 1 to 256, not -1"),
    ("2000000000", "download_concurrency must be from 1 to 256, not 2000000000"),
    ("ten", "download_concurrency: 'ten' is not a whole number (or auto)"),
])
def test_a_concurrency_no_sync_can_use_is_a_usage_error(db: Path, server: str, given: str, why: str) -> None:
    """The rule of downloaders/settings.py, as the API and the harness's specs apply it: one message for 0, -1
    and a value past the bound (downloaders.defaults.MAX_DOWNLOAD_CONCURRENCY)."""
    result = invoke("sync", server + "good/PULP_MANIFEST", "--concurrency", given)
    assert result.exit_code == 2 and result.stdout == ""
    option = "'--download-concurrency' / '--concurrency'"
    assert result.stderr.splitlines()[-1] == f"Error: Invalid value for {option}: {why}"
    assert not Remote.objects.exists()


def test_settings_the_remote_refuses_together_are_a_usage_error(db: Path, server: str) -> None:
    """Past click's parsing, the remote's own check (Remote.clean): still exit status 2, in one line."""
    result = invoke("sync", server + "good/PULP_MANIFEST", "--username", "someone")
    assert result.exit_code == 2
    assert result.stderr == "Error: remote 'good': username and password go together: give both or neither\n"
    assert not Remote.objects.exists()


@pytest.mark.parametrize("args", [
    ("sync", "{server}good/PULP_MANIFEST", "--downloader", "asyncoi"),
    ("sync", "{server}good/PULP_MANIFEST", "--concurrency", "-1"),
    ("sync", "{server}good/PULP_MANIFEST", "--max-retries", "-1"),
    ("sync", "ftp://127.0.0.1/PULP_MANIFEST"),
    ("sync", "{server}good/PULP_MANIFEST", "--no-wait"),
    ("api", "--bind", "127.0.0.1:99999"),
    ("api", "--bind", "no-such-host.invalid:24817"),
    ("api", "--workers", "0"),
    ("worker", "--worker-class", "forking"),
    ("tasks", "--state", "done"),
    ("tasks", "cancel", "not-a-task-id"),
    ("createuser", "not a name!", "--password", "secret"),
    ("createuser", "someone", "--password", ""),
    ("reset", "--yes", "everything"),
    ("fixtures", "serve", "--root", ".", "--port", "99999"),
    ("plugin", "new", "My_Engine"),
])
def test_a_usage_error_is_exit_status_2_in_every_command(db: Path, server: str, args: tuple[str, ...]) -> None:
    """What was asked for on the command line cannot be done as given: click's exit status for usage errors,
    whether click's parsing or the model behind the command refuses it; never a traceback."""
    result = invoke(*(arg.format(server=server) for arg in args))
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stderr.splitlines()[-1].startswith("Error: ") and "Traceback" not in result.stderr


def test_failed_sync_is_one_error_line(db: Path, server: str) -> None:
    result = invoke("sync", server + "bad/PULP_MANIFEST", "--json")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: PULP_MANIFEST line 13: sha256 'abc' is not 64 hexadecimal characters")
    assert result.stderr.count("\n") == 1
    assert json.loads(result.stdout) == {"error": result.stderr.removeprefix("Error: ").rstrip("\n")}, \
        "with --json, stdout is an object even when the sync failed before it had a report"


def test_failed_download_still_reports_in_json(db: Path, server: str) -> None:
    result = invoke("sync", server + "missing/PULP_MANIFEST", "--json")
    assert result.exit_code == 1
    assert re.match(r"Error: could not download gone\.iso after \d attempt\(s\): HTTP 404", result.stderr)
    report = json.loads(result.stdout)
    assert (report["version"], report["failures"]) == (None, 1)
    assert report["error"] == result.stderr.removeprefix("Error: ").rstrip("\n")


def test_a_failed_first_sync_leaves_no_empty_repository_and_a_failed_resync_keeps_its_version(
    db: Path, server: str
) -> None:
    """The repository a sync made for itself goes again with the failure (its remote, the settings given, stays);
    a repository that was there before stays, with its version. (`--no-wait`, whose task has yet to run, keeps
    it: tests/pulp_sync/tasking/test_tasks.py syncs such a repository on a worker afterwards.)"""
    assert invoke("sync", server + "missing/PULP_MANIFEST", "--repository", "new").exit_code == 1
    assert not Repository.objects.filter(name="new").exists() and Remote.objects.filter(name="new").exists()
    assert invoke("sync", server + "good/PULP_MANIFEST", "--repository", "kept").exit_code == 0
    again = invoke("sync", server + "missing/PULP_MANIFEST", "--repository", "kept", "--remote", "gone")
    assert again.exit_code == 1 and "'kept' is unchanged" in again.stderr
    assert json.loads(invoke("repositories", "--json").stdout) == [{"name": "kept", "version": 1, "content_units": 12}]


def test_repositories_and_reset(db: Path, server: str) -> None:
    assert invoke("sync", server + "good/PULP_MANIFEST", "--repository", "mine").exit_code == 0
    listing = invoke("repositories")
    assert listing.exit_code == 0 and "mine" in listing.stdout and "12" in listing.stdout
    assert json.loads(invoke("repositories", "--json").stdout) == [{"name": "mine", "version": 1, "content_units": 12}]
    assert invoke("reset").exit_code == 1, "reset asks first"
    assert invoke("reset", "--yes").exit_code == 0
    assert not Artifact.objects.exists() and not RepositoryVersion.objects.exists()


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("http://127.0.0.1:8000/PULP_MANIFEST_100", "PULP_MANIFEST_100"),
        ("http://127.0.0.1:8000/many-small/PULP_MANIFEST", "many-small"),
        ("http://127.0.0.1:8000/PULP_MANIFEST", "127.0.0.1"),
    ],
)
def test_repository_name_comes_from_the_url(db: Path, url: str, name: str) -> None:
    """The remote, named after the repository, refuses a user without a password: its name is in the error."""
    result = invoke("sync", url, "--username", "someone")
    assert f"remote '{name}'" in result.stderr


def test_a_manifest_past_its_timeout_names_the_timeout_not_the_url(db: Path, server: str) -> None:
    """A total_timeout far below a fetch's time reads as itself ("0.0001 s", not "0 s") and advises the
    timeouts, where a bad URL advises the URL."""
    result = invoke("sync", server + "good/PULP_MANIFEST", "--total-timeout", "0.0001", "--max-retries", "0")
    assert result.exit_code == 1, result.output
    line = result.stderr.splitlines()[-1]
    assert "the total_timeout of 0.0001 s" in line and line.endswith(
        "raise the remote's timeouts if it is slow, or check its URL"), line
