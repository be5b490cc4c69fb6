"""pulp_base.console: piped or redirected, a line reaches the file whole and a table fits 140 columns."""

from __future__ import annotations

import pytest
from rich.table import Table

from pulp_base.console import console


@pytest.mark.parametrize("stderr", [False, True])
def test_piped_output_keeps_every_line_whole(capsys: pytest.CaptureFixture[str], stderr: bool) -> None:
    line = "100: asyncio ran 1.30 ± 0.02 times faster than futures " + "(a difference below 0.8% …) " * 8
    out = console(stderr=stderr)
    out.print(line, highlight=False)
    table = Table("manifest", "variant")
    table.add_row("100", "x" * 300)
    out.print(table)

    captured = capsys.readouterr()
    printed = (captured.err if stderr else captured.out).splitlines()
    assert printed[0] == line, "one line, as printed: grep and copy find it whole"
    assert max(len(row) for row in printed[1:]) == 140, "a table still fits the piped width"
