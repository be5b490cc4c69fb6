"""Every command of pulp-cli's `file` group against `pulp-sync api` and a worker: none ends in a traceback.

The commands are read from pulp-cli's own click tree, so a command a new pulp-cli adds is run too (with
no arguments, if this file has no invocation of it: click's usage error or pulp-cli's one-line error,
never a traceback). Each known command runs as a user would run it, in an order that makes sense (a
publication before the distribution serving it), and is checked on its exit code and output: what
pulp-sync serves does what it says (a file fetched through a distribution's URL has the sha256 it was
uploaded with), what it does not serve says so in one line (`Error: {"detail": "..."}`).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pytest
from pulp_cli import load_plugins, main as pulp_main

from tests.pulp_sync.test_api import PASSWORD, Api, pulp_sync, unique
from tests.pulp_sync.test_pulp_cli import Pulp, configured, stack  # noqa: F401 - a fixture, used by name

pytestmark = pytest.mark.slow

Check = Callable[[dict[str, Any], subprocess.CompletedProcess[str]], None]


def file_commands() -> list[tuple[str, ...]]:
    """Every leaf command under `pulp file`, as its words (`("file", "repository", "version", "repair")`)."""
    load_plugins()
    found: list[tuple[str, ...]] = []

    def walk(group: click.Group, words: tuple[str, ...]) -> None:
        for name, command in sorted(group.commands.items()):
            if isinstance(command, click.Group):
                walk(command, (*words, name))
            else:
                found.append((*words, name))

    walk(pulp_main.commands["file"], ("file",))  # type: ignore[arg-type]
    return found


@dataclass(frozen=True)
class Step:
    """One invocation: the command's words, its options (formatted with the run's `names`), and what it
    must end with: exit 0, or exit 1 with `refusal` in its one-line error; `check` looks further."""

    words: tuple[str, ...]
    options: tuple[str, ...] = ()
    refusal: str | None = None
    check: Check | None = None

    def argv(self, names: dict[str, Any]) -> list[str]:
        return [*self.words, *(option.format(**names) for option in self.options)]


def step(command: str, *options: str, refusal: str | None = None, check: Check | None = None) -> Step:
    return Step(tuple(command.split()), options, refusal, check)


def keep(name: str, key: str = "pulp_href") -> Check:
    """Remember a field of the JSON the command printed under `name`."""

    def check(names: dict[str, Any], done: subprocess.CompletedProcess[str]) -> None:
        names[name] = json.loads(done.stdout)[key]

    return check


def printed(expected: Callable[[dict[str, Any], Any], bool]) -> Check:
    """The JSON printed satisfies `expected(names, value)`."""

    def check(names: dict[str, Any], done: subprocess.CompletedProcess[str]) -> None:
        value = json.loads(done.stdout)
        assert expected(names, value), value

    return check


def served_over_http(names: dict[str, Any], _: subprocess.CompletedProcess[str]) -> None:
    """Through the distribution's URL, as pulp-cli shows it: the upload's bytes, and a manifest listing the
    published version (2: the sync's files and the upload), each file with the sha256 and size it lists."""
    base_url = names["base_url"]
    body = urllib.request.urlopen(base_url + "up/hello.txt", timeout=30).read()
    assert hashlib.sha256(body).hexdigest() == names["upload_sha256"]
    assert body == Path(names["upload"]).read_bytes()
    manifest = urllib.request.urlopen(base_url + "PULP_MANIFEST", timeout=30).read().decode().splitlines()
    assert len(manifest) == 13, "the sync's twelve files and the upload"
    for line in manifest:
        relative_path, sha256, size = line.split(",")
        served = urllib.request.urlopen(base_url + urllib.parse.quote(relative_path), timeout=30).read()
        assert (hashlib.sha256(served).hexdigest(), len(served)) == (sha256, int(size)), relative_path


ACS = "alternate content sources (ACS) are not supported by pulp-sync"
LABELS = "labels are not supported by pulp-sync"
NO_LABEL = "Could not find label with key 'k'."
STEPS = [
    step("file remote create", "--name", "{remote}", "--url", "{url}good/PULP_MANIFEST", check=keep("remote_href")),
    step("file remote list", "--name", "{remote}", check=printed(lambda names, listed: len(listed) == 1)),
    step("file remote show", "--name", "{remote}"),
    step("file remote update", "--name", "{remote}", "--download-concurrency", "4"),
    step("file remote label set", "--remote", "{remote}", "--key", "k", "--value", "v", refusal=LABELS),
    step("file remote label show", "--remote", "{remote}", "--key", "k", refusal=NO_LABEL),
    step("file remote label unset", "--remote", "{remote}", "--key", "k", refusal=LABELS),
    step("file remote role add", "--name", "{remote}", "--role", "file.fileremote_viewer", "--user", "{user}"),
    step("file remote role list", "--name", "{remote}"),
    step("file remote role my-permissions", "--name", "{remote}"),
    step("file remote role remove", "--name", "{remote}", "--role", "file.fileremote_viewer", "--user", "{user}"),
    step("file repository create", "--name", "{repository}", check=keep("repository_href")),
    step("file repository update", "--name", "{repository}", "--remote", "{remote}"),
    step("file repository sync", "--name", "{repository}"),
    step("file repository list", "--name-startswith", "{repository}"),
    step("file repository show", "--name", "{repository}",
         check=printed(lambda names, shown: shown["latest_version_href"].endswith("/versions/1/"))),
    step("file repository task list", "--repository", "{repository}",
         check=printed(lambda names, tasks: [task["name"] for task in tasks] == ["sync"])),
    step("file repository label set", "--repository", "{repository}", "--key", "k", "--value", "v", refusal=LABELS),
    step("file repository label show", "--repository", "{repository}", "--key", "k", refusal=NO_LABEL),
    step("file repository label unset", "--repository", "{repository}", "--key", "k", refusal=LABELS),
    step("file repository role add", "--name", "{repository}", "--role", "file.filerepository_viewer",
         "--user", "{user}"),
    step("file repository role list", "--name", "{repository}"),
    step("file repository role my-permissions", "--name", "{repository}"),
    step("file repository role remove", "--name", "{repository}", "--role", "file.filerepository_viewer",
         "--user", "{user}"),
    step("file repository version list", "--repository", "{repository}"),
    step("file repository version show", "--repository", "{repository}", "--version", "1"),
    step("file repository version scan", "--repository", "{repository}", "--version", "1",
         refusal="Capability 'scan' needed on 'repository version' for this command."),
    step("file content upload", "--relative-path", "up/hello.txt", "--file", "{upload}", "--repository",
         "{repository}", check=keep("uploaded")),
    step("file content upload", "--relative-path", "up/big.bin", "--file", "{upload}", "--chunk-size", "10",
         refusal="chunked uploads are not supported by pulp-sync"),
    step("file content list", "--repository-version", "{repository_href}versions/2/",
         check=printed(lambda names, units: "up/hello.txt" in {unit["relative_path"] for unit in units})),
    step("file content show", "--href", "{uploaded}", check=keep("upload_sha256", "sha256")),
    step("file content create", "--sha256", "{upload_sha256}", "--relative-path", "copy/hello.txt",
         "--repository", "{repository}", check=keep("copy")),
    step("file content label set", "--href", "{copy}", "--key", "k", "--value", "v", refusal=LABELS),
    step("file content label show", "--href", "{copy}", "--key", "k", refusal=NO_LABEL),
    step("file content label unset", "--href", "{copy}", "--key", "k", refusal=LABELS),
    step("file repository content list", "--repository", "{repository}",
         check=printed(lambda names, units: {"up/hello.txt", "copy/hello.txt"} <= {u["relative_path"] for u in units})),
    step("file repository content remove", "--repository", "{repository}", "--sha256", "{upload_sha256}",
         "--relative-path", "copy/hello.txt"),
    step("file repository content add", "--repository", "{repository}", "--sha256", "{upload_sha256}",
         "--relative-path", "copy/hello.txt"),
    step("file repository content modify", "--repository", "{repository}", "--remove-content",
         '[{{"sha256": "{upload_sha256}", "relative_path": "copy/hello.txt"}}]'),
    step("file repository version repair", "--repository", "{repository}", "--version", "2",
         check=printed(lambda names, task: (task["state"], task["result"]["missing"], task["result"]["corrupt"])
                       == ("completed", [], []))),
    step("file publication create", "--repository", "{repository}", "--version", "2", check=keep("publication")),
    step("file publication create", "--repository", "{repository}", "--version", "1", check=keep("unused")),
    step("file publication list", "--repository", "{repository}",
         check=printed(lambda names, listed: [p["pulp_href"] for p in listed] == [names[n] for n in ("unused",
                                                                                                        "publication")])),
    step("file publication show", "--href", "{publication}"),
    step("file publication destroy", "--href", "{unused}"),
    step("file publication role add", "--href", "{publication}", "--role", "file.filepublication_viewer",
         "--user", "{user}"),
    step("file publication role list", "--href", "{publication}"),
    step("file publication role my-permissions", "--href", "{publication}"),
    step("file publication role remove", "--href", "{publication}", "--role", "file.filepublication_viewer",
         "--user", "{user}"),
    step("file distribution create", "--name", "{distribution}", "--base-path", "{base_path}",
         "--publication", "{publication}", check=keep("base_url", "base_url")),
    step("file distribution create", "--name", "{distribution}-latest", "--base-path", "{base_path}-latest",
         "--repository", "{repository}"),
    step("file distribution list", "--base-path-contains", "{base_path}",
         check=printed(lambda names, listed: len(listed) == 2)),
    step("file distribution show", "--name", "{distribution}", check=served_over_http),
    step("file distribution update", "--name", "{distribution}-latest", "--base-path", "{base_path}-newest"),
    step("file distribution label set", "--distribution", "{distribution}", "--key", "k", "--value", "v",
         refusal=LABELS),
    step("file distribution label show", "--distribution", "{distribution}", "--key", "k", refusal=NO_LABEL),
    step("file distribution label unset", "--distribution", "{distribution}", "--key", "k", refusal=LABELS),
    step("file distribution role add", "--name", "{distribution}", "--role", "file.filedistribution_viewer",
         "--user", "{user}"),
    step("file distribution role list", "--name", "{distribution}"),
    step("file distribution role my-permissions", "--name", "{distribution}"),
    step("file distribution role remove", "--name", "{distribution}", "--role", "file.filedistribution_viewer",
         "--user", "{user}"),
    step("file repository version destroy", "--repository", "{repository}", "--version", "2",
         refusal="serves a publication of version 2"),
    step("file repository version destroy", "--repository", "{repository}", "--version", "6",
         refusal="is the latest of repository"),
    step("file repository version destroy", "--repository", "{repository}", "--version", "1"),
    step("file acs create", "--name", "{acs}", "--remote", "{remote}", "--path", "p", refusal=ACS),
    step("file acs list", refusal=ACS),
    step("file acs show", "--name", "{acs}", refusal=ACS),
    step("file acs update", "--name", "{acs}", "--remote", "{remote}", refusal=ACS),
    step("file acs refresh", "--name", "{acs}", refusal=ACS),
    step("file acs path add", "--name", "{acs}", "--path", "q", refusal=ACS),
    step("file acs path remove", "--name", "{acs}", "--path", "q", refusal=ACS),
    step("file acs role add", "--name", "{acs}", "--role", "file.filealternatecontentsource_viewer",
         "--user", "{user}", refusal=ACS),
    step("file acs role list", "--name", "{acs}", refusal=ACS),
    step("file acs role my-permissions", "--name", "{acs}", refusal=ACS),
    step("file acs role remove", "--name", "{acs}", "--role", "file.filealternatecontentsource_viewer",
         "--user", "{user}", refusal=ACS),
    step("file acs destroy", "--name", "{acs}", refusal=ACS),
    step("file distribution destroy", "--name", "{distribution}-latest"),
    step("file repository create", "--name", "{repository}-gone"),
    step("file repository destroy", "--name", "{repository}-gone"),
    step("file remote create", "--name", "{remote}-gone", "--url", "{url}good/PULP_MANIFEST"),
    step("file remote destroy", "--name", "{remote}-gone"),
]
"""A realistic run of every `file` command pulp-cli 0.41 has, in order; `{...}` are the run's names."""


@dataclass
class Run:
    """The commands run so far and what each printed, for the checks after them."""

    pulp: Pulp
    names: dict[str, Any]
    server_log: Path
    ran: list[tuple[str, ...]] = field(default_factory=list)

    def __call__(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        done = self.pulp(*argv)
        said = done.stdout + done.stderr
        assert "Traceback" not in said, f"pulp {' '.join(argv)}:\n{said}"
        assert "Server Error (500)" not in said, f"pulp {' '.join(argv)}: the server's log ends\n{self.log_tail()}"
        return done

    def log_tail(self) -> str:
        return "\n".join(self.server_log.read_text(errors="replace").splitlines()[-60:])


@pytest.fixture
def run(stack: Api, server: str, tmp_path: Path) -> Iterator[Run]:
    user = unique("bob")
    pulp_sync(stack.env, "createuser", user, "--password", PASSWORD)
    upload = tmp_path / "hello.txt"
    upload.write_bytes(b"Hello from pulp-cli.\n" * 10)
    names = {
        "remote": unique("r"), "repository": unique("repo"), "distribution": unique("d"), "acs": unique("acs"),
        "base_path": unique("site/files"), "url": server, "user": user, "upload": str(upload),
    }
    yield Run(configured(stack, tmp_path / "home"), names, Path(stack.env["PULP_SYNC_HOME"]).parent / "api.log")


def test_every_command_of_the_file_group_ends_without_a_traceback(run: Run) -> None:
    for planned in STEPS:
        argv = planned.argv(run.names)
        done = run(argv)
        if planned.refusal is None:
            assert done.returncode == 0, f"pulp {' '.join(argv)}: {done.stderr}"
        else:
            assert done.returncode == 1 and planned.refusal in done.stderr, f"pulp {' '.join(argv)}: {done.stderr}"
            assert len(done.stderr.strip().splitlines()) == 1, f"one line: {done.stderr}"
        if planned.check is not None:
            planned.check(run.names, done)
        run.ran.append(planned.words)

    untried = [words for words in file_commands() if words not in set(run.ran)]
    for words in untried:  # a command newer than this file: it must at least not end in a traceback
        assert run(list(words)).returncode in (0, 1, 2)
    if untried:
        warnings.warn(f"pulp-cli commands with no invocation here ran without arguments only: {untried}", stacklevel=1)

