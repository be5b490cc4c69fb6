"""The fault matrix, reduced: every downloader x fault kind at a 50% rate, one sync each, through the real script.

`scripts/fault_matrix.py` with its defaults runs the full matrix (over 1,000 syncs, docs/reliability.md);
here it runs in a subprocess as an operator would, and its JSON must meet the same bar: every sync
completed or failed clean, no corrupt artifact, no orphan, no other problem, no half-made version.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fixtures.faults import FaultKind
from scripts.fault_matrix import BAR, Cell, table, total
from tests.pulp_sync.conftest import ENGINES

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fault_matrix.py"


def test_the_reduced_matrix_meets_the_bar(tmp_path: Path) -> None:
    out = tmp_path / "matrix.json"
    command = [sys.executable, str(SCRIPT), "--syncs", "1", "--rates", "0.5", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr

    result = json.loads(out.read_text())
    cells = result["cells"]
    assert [(c["downloader"], c["fault"]) for c in cells] == [(e, k.value) for k in FaultKind for e in ENGINES]
    for cell in cells:
        assert cell["syncs"] == 1 and cell["faults_injected"] > 0, cell
        assert cell["completed"] + cell["failed_clean"] == 1, cell
        assert all(cell[name] == 0 for name in BAR), cell
    summed = result["total"]
    assert summed["syncs"] == 2 * len(FaultKind) and summed["completed"] > 0 and summed["failed_clean"] > 0
    assert summed["retries"] > 0
    assert f"| all | all | all | {summed['syncs']} | {summed['faults_injected']} |" in done.stdout
    assert f"{summed['syncs']} syncs in " in done.stdout and "0 corrupt artifacts, 0 orphans" in done.stdout


def test_the_table_sums_its_cells() -> None:
    cells = [
        Cell("asyncio", "reset", 0.1, syncs=2, completed=1, failed_clean=1, retries=3),
        Cell("futures", "reset", 0.1, syncs=1, completed=1, retries=1),
    ]
    rows = table(cells).splitlines()
    assert rows[0].startswith("| downloader | fault | rate | syncs | faults injected | retries | completed |")
    assert rows[2].startswith("| asyncio | reset | 10% | 2 | 0 | 3 | 1 | 1 | 0 |")
    assert rows[-1].startswith("| all | all | all | 3 | 0 | 4 | 2 | 1 | 0 |")
    assert total(cells).syncs == 3
