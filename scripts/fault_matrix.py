#!/usr/bin/env python3
"""The fault matrix: every downloader x fault kind x fault rate, many syncs each, and what they left behind.

Each sync starts from a fresh state holding a previous repository version (synced from a fault-free
server), then syncs a small repository (20 files of 2-6 kB) from a fixture server that injects one
kind of fault at one rate. Every sync must either complete, making a version with exactly the
manifest's content, or fail with a SyncError and leave the previous version current; after each,
`verify` (without repair) must find nothing wrong: no corrupt or missing artifact, no orphan, no temp
file left behind. One fault server per (kind, rate) serves every sync of that cell, so its faults
fall on different requests each time. Cells run in `--jobs` processes, each with its own sqlite
database and store.

    .venv/bin/python scripts/fault_matrix.py                     # 2 x 6 x 3 cells x 28 syncs = 1008 syncs
    .venv/bin/python scripts/fault_matrix.py --syncs 1 --rates 0.5 --json out.json

Prints a markdown table per cell and the totals; exits with status 1 if any sync failed unclean,
stored a corrupt artifact, left an orphan or a half-made version.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from fixtures.faults import FaultConfig, FaultKind
from fixtures.server import RunningServer, serve_in_background
from pulp_base.manifest import MANIFEST_NAME

ENGINES = ("asyncio", "futures")
RATES = (0.01, 0.1, 0.5)
SYNCS_PER_CELL = 28
REMOTE_SETTINGS = {"download_concurrency": 4, "max_retries": 3, "sock_read_timeout": 0.5}
"""A read timeout well under the stall, so a stalled response is retried rather than waited out."""
STALL_SECONDS = 2.0
RETRY_AFTER = 1


@dataclass
class Cell:
    """The outcomes of the syncs of one downloader at one fault kind and rate."""

    downloader: str
    fault: str
    rate: float
    syncs: int = 0
    faults_injected: int = 0
    retries: int = 0
    completed: int = 0
    failed_clean: int = 0
    failed_unclean: int = 0
    corrupt_artifacts: int = 0
    orphans: int = 0
    other_problems: int = 0
    half_made_versions: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    def add(self, other: Cell) -> None:
        """Count `other`'s syncs in this cell too."""
        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.seconds += other.seconds
        self.errors += other.errors


COUNTS = [f.name for f in fields(Cell) if f.type == "int"]
BAR = ("failed_unclean", "corrupt_artifacts", "orphans", "other_problems", "half_made_versions")
"""Counts that must be 0."""


def write_tree(root: Path, files: int, seed: int) -> None:
    """base/ (the previous version: 3 files) and files/ (`files` files of 2-6 kB), each with a PULP_MANIFEST."""
    rng = random.Random(seed)
    for folder, count in (("base", 3), ("files", files)):
        lines = []
        for index in range(count):
            body = rng.randbytes(rng.randint(2_000, 6_000))
            (root / folder).mkdir(parents=True, exist_ok=True)
            (root / folder / f"{folder}-{index:03d}.bin").write_bytes(body)
            lines.append(f"{folder}-{index:03d}.bin,{hashlib.sha256(body).hexdigest()},{len(body)}\n")
        (root / folder / MANIFEST_NAME).write_text("".join(lines))


def fault_config(kind: FaultKind, rate: float, seed: int) -> FaultConfig:
    """One kind of fault at one rate; stalls outlast the remote's read timeout, 429s ask for a second."""
    fraction: dict[str, float] = {kind.value: rate}
    return FaultConfig(stall_seconds=STALL_SECONDS, retry_after=RETRY_AFTER, seed=seed, **fraction)  # type: ignore[arg-type]


def run_cells(
    tree: Path,
    work: Path,
    kinds: list[FaultKind],
    rates: list[float],
    engines: list[str],
    syncs: int,
    jobs: int,
    seed: int,
) -> list[Cell]:
    """Every cell, one (kind, rate) per task in a pool of `jobs` processes; cells in matrix order."""
    units = [(kind, rate) for kind in kinds for rate in rates]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_process, initargs=(str(work),)) as pool:
        futures = [
            pool.submit(_run_unit, str(tree), kind.value, rate, engines, syncs, seed + index)
            for index, (kind, rate) in enumerate(units)
        ]
        return [cell for future in futures for cell in future.result()]


def _start_process(work: str) -> None:
    """A pool process: Django on a sqlite database and a store of its own."""
    os.environ.pop("DATABASE_URL", None)
    os.environ["PULP_SYNC_HOME"] = tempfile.mkdtemp(prefix="home-", dir=work)
    import pulp_sync
    from pulp_sync import database

    pulp_sync.setup()
    database.migrate()


def _run_unit(tree: str, kind: str, rate: float, engines: list[str], syncs: int, seed: int) -> list[Cell]:
    """The cells of one (kind, rate): a fault-free server for the previous versions, one faulty server for all."""
    config = fault_config(FaultKind(kind), rate, seed)
    expected = _listed(Path(tree) / "files" / MANIFEST_NAME)
    with serve_in_background(Path(tree)) as clean, serve_in_background(Path(tree), faults=config) as faulty:
        cells = []
        for engine in engines:
            cell = Cell(engine, kind, rate)
            for _ in range(syncs):
                cell.add(_one_sync(clean.url, faulty, engine, expected, Cell(engine, kind, rate)))
            cells.append(cell)
            print(_progress_line(cell), file=sys.stderr, flush=True)
        return cells


def _one_sync(clean: str, faulty: RunningServer, engine: str, expected: set[tuple[str, str]], cell: Cell) -> Cell:
    """Reset, sync the previous version, sync through the faults, then check the outcome and the store."""
    from pulp_sync import database
    from pulp_sync.content.store import artifact_store
    from pulp_sync.content.verify import verify_store
    from pulp_sync.models import Remote, Repository
    from pulp_sync.sync.pipeline import SyncError, SyncReport, sync_repository

    database.reset()
    repository = Repository.objects.create(name="repo")
    base = Remote.objects.create(name="base", url=f"{clean}base/{MANIFEST_NAME}", downloader=engine)
    sync_repository(base, repository)
    previous = _content(repository)
    url = f"{faulty.url}files/{MANIFEST_NAME}"
    remote = Remote.objects.create(name="faulty", url=url, downloader=engine, **REMOTE_SETTINGS)
    faulty.reset_stats()
    started = time.monotonic()
    error: BaseException | None = None
    report: SyncReport | None
    try:
        report = sync_repository(remote, repository)
    except SyncError as failure:
        report, error = failure.report, failure
    except Exception as crash:  # noqa: BLE001 - an unclean failure, counted and shown
        report, error = None, crash
    cell.seconds = time.monotonic() - started
    found = verify_store(artifact_store())
    latest = repository.latest_version()
    number, content = (2, expected) if error is None else (1, previous)
    whole = latest is not None and latest.number == number and _content(repository) == content
    clean_failure = isinstance(error, SyncError) and whole and found.problems() == 0
    cell.syncs = 1
    cell.faults_injected = sum(faulty.stats()["faults"].values())
    cell.retries = report.retries if report is not None else 0
    cell.completed = int(error is None)
    cell.failed_clean = int(clean_failure)
    cell.failed_unclean = int(error is not None and not clean_failure)
    cell.corrupt_artifacts = len(found.corrupt)
    cell.orphans = len(found.orphans)
    cell.other_problems = found.problems() - cell.corrupt_artifacts - cell.orphans
    cell.half_made_versions = int(not whole)
    if cell.failed_unclean or found.problems() or not whole:
        cell.errors.append(f"{type(error).__name__}: {error}; verify: {found.as_dict()}")
    return cell


def _content(repository: Any) -> set[tuple[str, str]]:
    latest = repository.latest_version()
    return set(latest.content.values_list("relative_path", "artifact__sha256")) if latest else set()


def _listed(manifest: Path) -> set[tuple[str, str]]:
    """The (relative path, sha256) pairs a manifest lists."""
    from pulp_base.manifest import parse_manifest

    return {(entry.relative_path, entry.sha256) for entry in parse_manifest(manifest)}


def _progress_line(cell: Cell) -> str:
    return (
        f"{cell.downloader} {cell.fault} {cell.rate:g}: {cell.completed} completed, {cell.failed_clean} failed clean, "
        f"{cell.failed_unclean} unclean, {cell.faults_injected} faults, {cell.seconds:.0f} s"
    )


def total(cells: Iterable[Cell]) -> Cell:
    """Every cell's counts summed, as the cell of "all"."""
    summed = Cell("all", "all", 0.0)
    for cell in cells:
        summed.add(cell)
    return summed


def table(cells: list[Cell]) -> str:
    """A markdown table: one row per cell, then the totals."""
    header = ["downloader", "fault", "rate", *(name.replace("_", " ") for name in COUNTS)]
    rows = [header, ["---"] * len(header)]
    for cell in [*cells, total(cells)]:
        rate = "all" if cell.fault == "all" else f"{cell.rate:.0%}"
        rows.append([cell.downloader, cell.fault, rate, *(str(getattr(cell, name)) for name in COUNTS)])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def main(argv: list[str] | None = None) -> int:
    """Run the matrix the options describe, print its table; 1 if the bar is not met."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--syncs", type=int, default=SYNCS_PER_CELL, help="syncs per cell [%(default)s]")
    parser.add_argument("--files", type=int, default=20, help="files in the synced repository [%(default)s]")
    parser.add_argument("--rates", default=",".join(map(str, RATES)), help="fault rates [%(default)s]")
    parser.add_argument("--kinds", default=",".join(k.value for k in FaultKind), help="fault kinds [%(default)s]")
    parser.add_argument("--downloaders", default=",".join(ENGINES), help="downloaders [%(default)s]")
    parser.add_argument("--jobs", type=int, default=2, help="processes running cells [%(default)s]")
    parser.add_argument("--seed", type=int, default=0, help="seed of the tree and of the fault decisions")
    parser.add_argument("--json", type=Path, help="also write the cells and totals as JSON here")
    options = parser.parse_args(argv)
    kinds = [FaultKind(kind) for kind in options.kinds.split(",")]
    rates = [float(rate) for rate in options.rates.split(",")]
    engines = options.downloaders.split(",")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fault-matrix-") as work:
        tree = Path(work) / "tree"
        write_tree(tree, options.files, options.seed)
        cells = run_cells(tree, Path(work), kinds, rates, engines, options.syncs, options.jobs, options.seed)
    seconds = time.monotonic() - started
    summed = total(cells)
    print(table(cells))
    print(
        f"\n{summed.syncs} syncs in {seconds:.0f} s wall time ({options.jobs} processes): "
        f"{summed.completed} completed, {summed.failed_clean} failed clean, {summed.failed_unclean} failed unclean; "
        f"{summed.faults_injected} faults injected, {summed.retries} retries; {summed.corrupt_artifacts} corrupt "
        f"artifacts, {summed.orphans} orphans, {summed.other_problems} other problems, "
        f"{summed.half_made_versions} half-made versions"
    )
    for error in summed.errors[:10]:
        print(f"problem: {error}")
    if options.json:
        options.json.write_text(
            json.dumps({"seconds": seconds, "cells": [asdict(c) for c in cells], "total": asdict(summed)}, indent=1)
        )
    return 1 if any(getattr(summed, name) for name in BAR) else 0


if __name__ == "__main__":
    sys.exit(main())
