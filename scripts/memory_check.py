#!/usr/bin/env python3
"""Peak RSS of whole syncs that would need a lot of memory if anything were held per file or per byte.

Two cases, each synced by every installed downloader in a fresh child process with a fresh state
directory: a manifest of 100,000 tiny files, and one file of 1 GB. The child's peak RSS is the
kernel's high-water mark of that process (VmHWM, read by harness.run.child while it runs). The trees are
removed afterwards unless --work names where to keep them. Usage:

    .venv/bin/python scripts/memory_check.py [--files 100000] [--big-mb 1000] [--work DIR] [--downloader NAME]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import downloaders
from fixtures.server import serve_in_background
from harness.run.child import run_child
from pulp_base.manifest import MANIFEST_NAME

LIMIT_MB = 200


def write_tiny_files(root: Path, count: int) -> str:
    """`count` files of 16-64 bytes and their manifest; returns the manifest's relative path."""
    folder = root / "tiny"
    rng = random.Random(0)
    lines = []
    for index in range(count):
        relative = f"d{index // 1000:03d}/t{index:06d}"
        body = rng.randbytes(rng.randint(16, 64))
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(body)
        lines.append(f"{relative},{hashlib.sha256(body).hexdigest()},{len(body)}\n")
    (folder / MANIFEST_NAME).write_text("".join(lines))
    return f"tiny/{MANIFEST_NAME}"


def write_big_file(root: Path, megabytes: int) -> str:
    """One file of `megabytes` MB (1e6 bytes) and its manifest; returns the manifest's relative path."""
    folder = root / "big"
    folder.mkdir(parents=True, exist_ok=True)
    digest, rng = hashlib.sha256(), random.Random(1)
    with open(folder / "big.bin", "wb") as out:
        for _ in range(megabytes):
            chunk = rng.randbytes(1_000_000)
            digest.update(chunk)
            out.write(chunk)
    (folder / MANIFEST_NAME).write_text(f"big.bin,{digest.hexdigest()},{megabytes * 1_000_000}\n")
    return f"big/{MANIFEST_NAME}"


def sync_in_child(url: str, downloader: str, home: Path) -> dict[str, Any]:
    """One `pulp-sync sync --json` in a fresh process; its report (JSON) plus the kernel's peak RSS for it."""
    env = dict(os.environ, PULP_SYNC_HOME=str(home))
    run = run_child([sys.executable, "-m", "pulp_sync", "sync", url, "--downloader", downloader, "--json"], env)
    if run.returncode != 0:
        raise SystemExit(f"sync with {downloader} failed: {run.stderr.strip()}")
    report = json.loads(run.stdout)
    report["peak_rss_mb"] = run.peak_rss_mb
    report["process_seconds"] = run.wall_seconds
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=100_000, help="tiny files in the first manifest")
    parser.add_argument("--big-mb", type=int, default=1000, help="size of the single big file, MB")
    parser.add_argument("--work", type=Path, default=None, help="where to write the trees (default: a temp dir)")
    parser.add_argument("--downloader", action="append", help="only this downloader (repeatable; default: all)")
    args = parser.parse_args()
    names = args.downloader or sorted(downloaders.available())
    if args.work is None:
        with tempfile.TemporaryDirectory(prefix="memory-check-") as work:
            return check(Path(work), args.files, args.big_mb, names)
    return check(args.work, args.files, args.big_mb, names)


def check(work: Path, files: int, big_mb: int, names: list[str]) -> int:
    """Write both trees under `work`, sync each with every downloader, print the table; 1 if over the bound."""
    tree = work / "tree"
    print(f"Writing {files} tiny files and one {big_mb} MB file under {tree} ...", flush=True)
    cases = {
        f"{files} tiny files": write_tiny_files(tree, files),
        f"1 file of {big_mb} MB": write_big_file(tree, big_mb),
    }
    worst = 0.0
    print("| case | downloader | artifacts | MB | sync s | peak RSS MB |\n|---|---|---|---|---|---|")
    with serve_in_background(tree) as server:
        for case, manifest in cases.items():
            for downloader in names:
                home = work / f"home-{downloader}-{manifest.split('/')[0]}"
                report = sync_in_child(server.url + manifest, downloader, home)
                worst = max(worst, float(report["peak_rss_mb"]))
                print(
                    f"| {case} | {downloader} | {report['artifacts_downloaded']}"
                    f" | {report['bytes_downloaded'] / 1e6:.1f} | {report['seconds']:.1f}"
                    f" | {report['peak_rss_mb']:.1f} |",
                    flush=True,
                )
    verdict = "within" if worst <= LIMIT_MB else "OVER"
    print(f"Worst peak RSS {worst:.1f} MB: {verdict} the {LIMIT_MB} MB bound.")
    return 0 if worst <= LIMIT_MB else 1


if __name__ == "__main__":
    sys.exit(main())
