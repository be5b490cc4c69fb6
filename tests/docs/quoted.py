"""Outputs the docs quote, produced by the commands that print them, so that they cannot drift.

A fenced block in README.md or docs/*.md that follows a comment

    <!-- output
    bench compare {recorded}/base {recorded}/limited --fail-on-regression 5
    -->

holds, for each command in the comment (one per line, `VAR=value` words first for its environment),
`$ pulp-sync COMMAND`, what the command printed (stdout and stderr as they came, without the spaces
rich leaves at the ends of lines) and `exit N` when N is not 0. tests/docs/test_quoted_outputs.py
runs every such command and compares; after a change of wording, `python -m tests.docs.quoted
--write` rewrites the blocks from the code. A comment that begins `<!-- output excerpt` marks a
block that quotes some of those lines: each of its lines must be one of them, in their order, `...`
standing for those left out; --write leaves such blocks to be edited by hand and names the ones
that no longer match.

Commands see three placeholders, shown in the docs as the recorded session (tests/docs/walkthrough.py)
saw them: `{recorded}`, a copy of tests/docs/recorded/ (shown as `results`), and `{remote}` and `{ca}`,
a remote of the test's own serving the recorded manifest, with HTTP basic auth as user `ops` (its
password in REMOTE_PASSWORD) behind TLS with a certificate of its own (shown as the recorded remote's
URL and CA path).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fixtures.server import make_app
from tests.servers import requiring_password, self_signed_certificate, serve_app

ROOT = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).resolve().parent / "recorded"
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
QUOTE = re.compile(r"<!-- output(?P<excerpt> excerpt)?\s*\n(?P<commands>.*?)-->\n```[a-z]*\n(?P<block>.*?)```", re.S)
ELLIPSIS = "..."
"""A line of an excerpt that stands for the lines left out."""


@dataclass(frozen=True)
class Quote:
    """One quoted block: its file, where its text starts and ends, its commands and what it says now."""

    path: Path
    start: int
    end: int
    commands: tuple[str, ...]
    text: str
    excerpt: bool

    def matches(self, produced: str) -> bool:
        """The block is `produced`, or for an excerpt some of its lines in their order."""
        if not self.excerpt:
            return produced == self.text
        lines = iter(line.rstrip() for line in produced.splitlines())
        return all(any(line.rstrip() == candidate for candidate in lines)
                   for line in self.text.splitlines() if line != ELLIPSIS)

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.path.read_text()[:self.start].count(chr(10)) + 1}"


def quotes(paths: tuple[Path, ...] = DOCS) -> list[Quote]:
    """Every quoted block in `paths`, in order."""
    found = []
    for path in paths:
        for match in QUOTE.finditer(path.read_text()):
            commands = tuple(line.strip() for line in match["commands"].splitlines() if line.strip())
            found.append(Quote(path, match.start("block"), match.end("block"), commands, match["block"],
                               bool(match["excerpt"])))
    return found


@dataclass(frozen=True)
class Places:
    """What the placeholders stand for in this session, and what the docs show for each."""

    actual: dict[str, str]
    shown: dict[str, str]
    env: dict[str, str]
    """The environment every command gets: REMOTE_PASSWORD, the password of the test's own remote."""

    def command(self, template: str) -> str:
        return template.format(**self.actual)

    def display(self, text: str) -> str:
        """`text` with this session's paths and URLs replaced by the recorded ones, longest first."""
        for key in sorted(self.actual, key=lambda key: -len(self.actual[key])):
            text = text.replace(self.actual[key], self.shown[key])
        return text


@contextmanager
def places(work: Path) -> Iterator[Places]:
    """A copy of the recorded folders, and the test's own remote serving the recorded manifest, for one
    session of quotes."""
    session = json.loads((RECORDED / "session.json").read_text())
    recorded = work / "recorded"
    shutil.copytree(RECORDED, recorded)
    certificate, key = self_signed_certificate(work)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate, key)
    password = os.urandom(12).hex()
    with serve_app(requiring_password(make_app(recorded / "remote"), "ops", password), context) as url:
        yield Places({"recorded": str(recorded), "remote": url.rstrip("/"), "ca": str(certificate)},
                     {"recorded": "results", "remote": session["remote"].rstrip("/"), "ca": session["ca_cert"]},
                     {"REMOTE_PASSWORD": password})


def produce(quote: Quote, where: Places, cwd: Path) -> str:
    """What the quote's commands print now, as the block shows it."""
    parts = []
    for template in quote.commands:
        words = shlex.split(where.command(template))
        assignments = {}
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            name, _, value = words.pop(0).partition("=")
            assignments[name] = value
        env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", **where.env, **assignments}
        done = subprocess.run([sys.executable, "-m", "pulp_sync", *words], cwd=cwd, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        printed = "".join(line.rstrip() + "\n" for line in where.display(done.stdout).splitlines())
        parts.append(f"$ {shown_command(template, where)}\n{printed}")
        if done.returncode:
            parts.append(f"exit {done.returncode}\n")
    return "".join(parts)


def shown_command(template: str, where: Places) -> str:
    """The command line as the reader types it: environment words, then `pulp-sync` and its arguments."""
    words = template.split(" ")
    first = next((i for i, word in enumerate(words) if not re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", word)), 0)
    return " ".join([*words[:first], "pulp-sync", *words[first:]]).format(**where.shown)


def write(paths: tuple[Path, ...] = DOCS) -> int:
    """Rewrite every quoted block from the code; the number of blocks changed."""
    changed = 0
    with tempfile.TemporaryDirectory(prefix="quoted-") as folder, places(Path(folder)) as where:
        for path in paths:
            for quote in reversed(quotes((path,))):
                produced = produce(quote, where, Path(folder))
                if quote.matches(produced):
                    continue
                if quote.excerpt:
                    print(f"{quote.name}: an excerpt that no longer matches; edit it by hand")
                else:
                    print(f"{quote.name}: rewritten")
                    text = path.read_text()
                    path.write_text(text[:quote.start] + produced + text[quote.end:])
                    changed += 1
    return changed


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.docs.quoted --write")
    print(f"{write()} quoted block(s) rewritten")
