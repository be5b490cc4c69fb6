"""docs/settings.md, generated from the one typed list of the service's settings (pulp_sync/environment.py),
so that the reference names every variable the service reads, with the default and the words of the code.

tests/docs/test_settings_reference.py fails when the file differs from what the list gives now;
`python -m tests.docs.settings_reference --write` rewrites it.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from pydantic.fields import FieldInfo

from pulp_sync import environment
from pulp_sync.environment import Environment

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "settings.md"
WIDTH = 110
"""Where the descriptions wrap, as the docs' other prose."""

HEAD = """\
# Settings

<!-- Generated from pulp_sync/environment.py by `python -m tests.docs.settings_reference --write`: edit the
     docstrings there, not this file. -->

The sync service (the CLI, `pulp-sync worker`, `pulp-sync api` and the syncs they run) reads these
environment variables once, when it starts. Every process of one installation must see the same ones:
a worker started without the API's `DATABASE_URL` syncs into another database.

- An unset or empty variable means its default, except where the empty value is said to mean
  something of its own.
- A value the service cannot use stops it with one line naming the variable, what it held and what to
  give: `Error: PULP_SYNC_WORKER_TTL='0': give a number of seconds, above 0, e.g. 30` (exit status 1),
  before anything is made.
- `pulp-sync settings` shows what a process with your environment reads: each variable's value (the
  secret key and URLs' passwords hidden) and whether it came from the environment or is the default;
  `--json` for a script.

| Variable | Default | Takes |
|---|---|---|
"""

OTHERS = """
## Read by one command

These are options of one command, given by the environment so that they stay out of `ps`:

- `PULP_SYNC_PASSWORD`: the password `pulp-sync createuser` gives the user (docs/api.md).
- `PULP_SYNC_FIXTURES`: where `pulp-sync fixtures generate` writes, and the harness looks for, the
  generated trees (default `./fixtures-data`; docs/harness.md).
- `PULP_SYNC_PULPCORE_VENV`: the virtualenv `scripts/pulpcore.sh` installs pulpcore into, for the
  harness's pulpcore variants (default `.venv-pulpcore`; docs/harness.md).
"""


def render() -> str:
    """The whole of docs/settings.md as the typed list gives it now."""
    fields = Environment.model_fields
    rows = "".join(f"| [`{environment.variable(name)}`](#{_anchor(name)}) | {_default(name, field)} | "
                   f"{environment.takes(name)} |\n" for name, field in fields.items())
    sections = "".join(_section(name, field) for name, field in fields.items())
    return HEAD + rows + "\n## The variables\n" + sections + OTHERS


def _section(name: str, field: FieldInfo) -> str:
    description = textwrap.fill(" ".join((field.description or "").split()), WIDTH, break_on_hyphens=False)
    return f"\n### {environment.variable(name)}\n\n{description}\n"


def _anchor(name: str) -> str:
    return environment.variable(name).lower()


def _default(name: str, field: FieldInfo) -> str:
    shown = environment.shown(name, field.default)
    return f"`{shown}`" if shown else "(none)"


def main(arguments: list[str]) -> int:
    if arguments == ["--write"]:
        REFERENCE.write_text(render(), encoding="utf-8")
        return 0
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
