"""pulp_sync.sync.spool: a planned download's line and back, whatever its path holds."""

from __future__ import annotations

from pathlib import Path

from pulp_sync.sync.spool import Spooled, parse_line, read_spool, spool_line


def test_a_line_reads_back_as_written_even_with_commas_in_the_path(tmp_path: Path) -> None:
    planned = [Spooled("a" * 64, 12, "dir/file,with,commas"), Spooled("b" * 64, 0, "ü/日本.bin")]
    spool = tmp_path / "missing.spool"
    spool.write_text("".join(spool_line(p.sha256, p.size, p.relative_path) for p in planned), encoding="utf-8")
    assert list(read_spool(spool)) == planned
    assert parse_line(spool_line("c" * 64, 3, "x")) == parse_line(spool_line("c" * 64, 3, "x").rstrip("\n"))
