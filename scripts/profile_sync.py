#!/usr/bin/env python3
"""Where a sync's CPU time goes: one `pulp-sync sync` under py-spy, against nginx on loopback.

Starts nginx over the fixture tree, runs the sync in a fresh PULP_SYNC_HOME (sqlite) under
`py-spy record` (busy threads only, every thread of the process), and prints the functions with the
most samples of their own, and the share of samples spent under each part of the work (hashing,
file writes, the network, the database...). Needs py-spy (`pip install py-spy`). Usage:

    .venv/bin/python scripts/profile_sync.py PULP_MANIFEST_100 [--downloader asyncio] [--concurrency 10]
    .venv/bin/python scripts/profile_sync.py many-small/PULP_MANIFEST --raw profile.txt
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from fixtures.generate import default_fixture_dir
from fixtures.nginx import serve_with_nginx

PARTS = {
    "downloads' hashing and writing (BodyWriter)": ("BodyWriter.write", "BodyWriter.add_to_digest", "_write_all"),
    "temp file creation, adoption into the store": ("mkstemp", "BodyWriter.__init__", "ArtifactStore.adopt"),
    "network (sockets, HTTP parsing)": (
        "selector_events", "aiohttp", "urllib3", "http/client", "socket.py", "httpcore", "h11", "uvloop"
    ),
    "database (Django, sqlite)": ("django/", "sqlite3"),
    "event loop machinery": ("asyncio/base_events", "asyncio/events", "asyncio/tasks", "asyncio/locks"),
    "thread hand-offs (queues, futures)": (
        "Condition.", "Event.", "Queue.", "concurrent/futures", "Handoff.", "HashingThread._put"
    ),
}
"""Parts of the work, each the frames whose text contains one of the strings; a sample counts once
per part it is under (so the shares need not add up to 100%)."""
WAITING = ("concurrent/futures/thread.py:81", "Condition.wait", "Event.wait", "selectors.py", "_wait_for_tstate_lock")
"""Innermost frames of a thread that waits (for work, a lock, the network): py-spy counts a thread
blocked in C code as busy, so these samples are dropped to leave the CPU's work."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", help="the manifest's path in the fixture tree, e.g. PULP_MANIFEST_100")
    parser.add_argument("--fixtures", type=Path, default=default_fixture_dir(1.0), help="the fixture tree")
    parser.add_argument("--downloader", default="asyncio")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--rate", type=int, default=250, help="samples per second")
    parser.add_argument("--top", type=int, default=15, help="how many functions to list")
    parser.add_argument("--raw", type=Path, help="also keep py-spy's collapsed stacks here")
    args = parser.parse_args()
    spy = shutil.which("py-spy", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if spy is None:
        sys.exit("py-spy is not installed: .venv/bin/pip install py-spy")
    stacks = profile(spy, args)
    if args.raw:
        args.raw.write_text("".join(f"{stack} {count}\n" for stack, count in stacks.items()))
    report(stacks, args.top)
    return 0


def profile(spy: str, args: argparse.Namespace) -> Counter[str]:
    """Run the sync under py-spy; its collapsed stacks (frames joined by ';') with sample counts."""
    with tempfile.TemporaryDirectory(prefix="pulp-sync-profile-") as work, serve_with_nginx(args.fixtures) as nginx:
        env = {**os.environ, "PULP_SYNC_HOME": f"{work}/home"}
        env.pop("DATABASE_URL", None)
        raw = Path(work) / "stacks.txt"
        subprocess.run([sys.executable, "-m", "pulp_sync", "migrate"], env=env, check=True, capture_output=True)
        sync = [sys.executable, "-m", "pulp_sync", "sync", nginx.url.rstrip("/") + "/" + args.manifest,
                "--downloader", args.downloader, "--concurrency", str(args.concurrency)]
        record = [spy, "record", "--format", "raw", "--rate", str(args.rate), "--output", str(raw), "--"]
        subprocess.run(record + sync, env=env, check=True, stdout=subprocess.DEVNULL)
        stacks: Counter[str] = Counter()
        for line in raw.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not any(needle in stack.rsplit(";", 1)[-1] for needle in WAITING):
                stacks[stack] += int(count)
        return stacks


def report(stacks: Counter[str], top: int) -> None:
    """Print the busiest functions (samples of their own) and the share of each part of the work."""
    total = sum(stacks.values())
    own: Counter[str] = Counter()
    for stack, count in stacks.items():
        own[stack.rsplit(";", 1)[-1]] += count
    print(f"{total} samples of working threads\n\n| own % | function (file:line) |\n|---|---|")
    for frame, count in own.most_common(top):
        print(f"| {100 * count / total:.1f} | `{frame}` |")
    print("\n| part of the work | % of samples under it |\n|---|---|")
    for part, needles in PARTS.items():
        under = sum(count for stack, count in stacks.items() if any(needle in stack for needle in needles))
        print(f"| {part} | {100 * under / total:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
