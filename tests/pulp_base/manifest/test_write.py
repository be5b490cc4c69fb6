"""write_manifest and format_line: what is written is what parse_manifest reads back, and a line the
reader would refuse is never written."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pulp_base.manifest import ManifestEntry, ManifestError, format_line, parse_manifest, write_manifest

DIGEST = "ab" * 32


def lines(count: int) -> list[str]:
    names = [f"dir {n}/file-ä-{n}.bin" for n in range(count)]
    return [f"{name},{hashlib.sha256(name.encode()).hexdigest()},{n * 7}\n" for n, name in enumerate(names)]


def test_write_manifest_writes_the_format_parse_manifest_reads(tmp_path: Path) -> None:
    entries = list(parse_manifest(lines(5)))
    out = tmp_path / "PULP_MANIFEST"

    write_manifest(entries, out)

    assert out.read_text(encoding="utf-8") == "".join(lines(5))
    assert list(parse_manifest(out)) == entries


@pytest.mark.parametrize(
    ("path", "complaint"),
    [
        ("a,b.iso", "contains a comma"),
        ("../a.iso", "'..' segment"),
        ("/a.iso", "is absolute"),
        ("a\\b.iso", "backslash"),
        ("a\nb.iso", "control character"),
        ("", "is empty"),
    ],
)
def test_a_path_the_reader_refuses_is_never_written(tmp_path: Path, path: str, complaint: str) -> None:
    out = tmp_path / "PULP_MANIFEST"

    with pytest.raises(ManifestError, match=complaint):
        write_manifest([ManifestEntry(1, "ok.iso", DIGEST, 1), ManifestEntry(2, path, DIGEST, 1)], out)

    assert not out.exists()


def test_a_comma_in_a_path_is_refused_by_the_reader_too() -> None:
    """The harness once read its manifests with rsplit, which took `a,b.iso` as a path the sync refuses."""
    with pytest.raises(ManifestError, match="expected 3 fields"):
        list(parse_manifest([f"a,b.iso,{DIGEST},1"]))


@pytest.mark.parametrize(("digest", "size"), [("AB" * 32, 1), ("ab" * 31, 1), (DIGEST, -1)])
def test_a_digest_or_size_the_reader_would_not_give_back_is_refused(digest: str, size: int) -> None:
    with pytest.raises(ManifestError, match="line 3"):
        format_line(ManifestEntry(3, "a.iso", digest, size), 3)
