"""External command variants: any downloader program (curl, aria2c, ...) timed like our own syncs.

A variant with `kind = "command"` gives a command template instead of a downloader, as hyperfine
takes any command. Before each run its output folder is emptied (and pulp-sync's state reset, as for
every run); the command runs in a child process whose wall time is the run's time; afterwards every
file it wrote is checked against the manifest (size and sha256, outside the timed part), so a peer
that fetched wrong or missing bytes is a failed run, not a fast one.

Placeholders of the template, each filled in per run:

| placeholder | what |
|---|---|
| `{manifest_url}` | the PULP_MANIFEST's URL |
| `{urls_file}` | a file of the manifest's file URLs, one per line |
| `{curl_config}` | a curl `-K` config: `url = ...` and `output = ...` per file |
| `{aria2_input}` | an aria2c `-i` input file: each URL with its `out=` path |
| `{aria2_input_sha256}` | the same with `checksum=sha-256=...` per file, so aria2c verifies |
| `{out_dir}` | the folder the files must land in, under their manifest paths |
| `{concurrency}` | the variant's `download_concurrency` |
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.run.child import ChildRun, run_child
from pulp_base.manifest import ManifestEntry, file_url, parse_manifest

__all__ = ["PLACEHOLDERS", "CommandInputs", "placeholders_of", "program_of", "write_inputs", "run_command",
           "check_output"]

PLACEHOLDERS = (
    "manifest_url",
    "urls_file",
    "curl_config",
    "aria2_input",
    "aria2_input_sha256",
    "out_dir",
    "concurrency",
)


@dataclass(frozen=True)
class CommandInputs:
    """The input files written once per manifest and base URL, and the entries to check against."""

    folder: Path
    entries: tuple[ManifestEntry, ...]

    def paths(self) -> dict[str, Path]:
        """Placeholder -> input file."""
        return {name: self.folder / name for name in ("urls_file", "curl_config", "aria2_input", "aria2_input_sha256")}


def placeholders_of(template: str) -> set[str]:
    """The names a template uses, e.g. {"urls_file", "concurrency"}."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def program_of(template: str) -> str:
    """The program a template starts (its first word), e.g. "curl"."""
    words = shlex.split(template)
    return words[0] if words else ""


def write_inputs(manifest_file: Path, manifest_url: str, folder: Path) -> CommandInputs:
    """Write the URL list, the curl config and the aria2c inputs for one manifest served at `manifest_url`."""
    entries = tuple(parse_manifest(manifest_file))
    folder.mkdir(parents=True, exist_ok=True)
    inputs = CommandInputs(folder, entries)
    paths = inputs.paths()
    urls = [file_url(manifest_url, entry.relative_path) for entry in entries]
    paths["urls_file"].write_text("".join(f"{url}\n" for url in urls))
    pairs = list(zip(urls, entries, strict=True))
    paths["curl_config"].write_text(
        "".join(f'url = "{url}"\noutput = "{_escaped(e.relative_path)}"\n' for url, e in pairs)
    )
    paths["aria2_input"].write_text("".join(f"{url}\n  out={e.relative_path}\n" for url, e in pairs))
    paths["aria2_input_sha256"].write_text(
        "".join(f"{url}\n  out={e.relative_path}\n  checksum=sha-256={e.sha256}\n" for url, e in pairs)
    )
    return inputs


def run_command(
    template: str, inputs: CommandInputs, manifest_url: str, out_dir: Path, concurrency: int,
    env: Mapping[str, str], timeout: float,
) -> ChildRun:
    """Empty `out_dir`, run the filled-in template there (relative outputs land in it), and measure it.

    Paths are filled in absolute: the command runs in `out_dir`, where a relative one would not resolve.
    """
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    values = {name: str(path.resolve()) for name, path in inputs.paths().items()}
    values.update(manifest_url=manifest_url, out_dir=str(out_dir.resolve()), concurrency=str(concurrency))
    command = [word.format(**values) for word in shlex.split(template)]
    return run_child(command, env=env, timeout=timeout, cwd=out_dir)


def check_output(inputs: CommandInputs, out_dir: Path) -> str | None:
    """Why the files in `out_dir` do not match the manifest (first problem, and how many), or None."""
    problems = [problem for entry in inputs.entries if (problem := _problem(out_dir, entry))]
    if not problems:
        return None
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{problems[0]}{more}"


def _problem(out_dir: Path, entry: ManifestEntry) -> str | None:
    path = out_dir / entry.relative_path
    if not path.is_file():
        return f"{entry.relative_path} is missing"
    if path.stat().st_size != entry.size:
        return f"{entry.relative_path} has {path.stat().st_size} bytes, the manifest says {entry.size}"
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")
    if digest.hexdigest() != entry.sha256:
        return f"{entry.relative_path} does not match its sha256"
    return None


def _escaped(value: str) -> str:
    """A value inside double quotes of a curl config (backslash and quote escaped)."""
    return value.replace("\\", "\\\\").replace('"', '\\"')
