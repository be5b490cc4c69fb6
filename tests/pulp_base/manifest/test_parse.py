"""parse_manifest: every kind of bad line is refused with its line number; good ones stream through."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pulp_base.manifest import ManifestEntry, ManifestError, parse_manifest

DIGEST = "ab" * 32
GOOD = f"a.iso,{DIGEST},5"


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        (f"a.iso,{DIGEST}", "found 2"),
        (f"a.iso,{DIGEST},5,extra", "found 4"),
        ("a.iso," + "g" * 64 + ",5", "not 64 hexadecimal"),
        ("a.iso," + "a" * 63 + ",5", "not 64 hexadecimal"),
        (f"a.iso,{DIGEST},-5", "size '-5' is not a non-negative integer"),
        (f"a.iso,{DIGEST},1.5", "size '1.5' is not"),
        (f"a.iso,{DIGEST},abc", "size 'abc' is not"),
        (f"a.iso,{DIGEST},+5", "size '+5' is not"),
        (f"a.iso,{DIGEST},", "size '' is not"),
        (f"../a.iso,{DIGEST},5", "'..' segment"),
        (f"dir/../../a.iso,{DIGEST},5", "'..' segment"),
        (f"./a.iso,{DIGEST},5", "'.' or '..' segment"),
        (f"dir//a.iso,{DIGEST},5", "empty"),
        (f"dir/,{DIGEST},5", "empty"),
        (f"/etc/passwd,{DIGEST},5", "is absolute"),
        (f"C:a.iso,{DIGEST},5", "is absolute"),
        (f"C:\\a.iso,{DIGEST},5", "backslash"),
        (f"\\a.iso,{DIGEST},5", "backslash"),
        (f"dir\\a.iso,{DIGEST},5", "backslash"),
        (f",{DIGEST},5", "is empty"),
        (f"a\x00.iso,{DIGEST},5", "control character"),
        (f"a\x1b[2J.iso,{DIGEST},5", "control character"),
        ("a" * 1025 + f",{DIGEST},5", "longer than 1024"),
        (f"a.iso,{DIGEST},{2**63}", "not a non-negative integer"),
    ],
)
def test_bad_line_names_its_number(line: str, complaint: str) -> None:
    lines = [GOOD.replace("a.iso", "first.iso") + "\n", "\n", line + "\n"]
    with pytest.raises(ManifestError) as caught:
        list(parse_manifest(lines))
    assert caught.value.line == 3
    assert str(caught.value).startswith("PULP_MANIFEST line 3: ")
    assert complaint in str(caught.value)


def test_duplicate_path_names_both_lines() -> None:
    with pytest.raises(ManifestError, match=r"line 3: duplicate relative path 'a.iso' \(first on line 1\)"):
        list(parse_manifest([GOOD, f"b.iso,{DIGEST},5", GOOD.replace(DIGEST, "cd" * 32)]))


def test_one_digest_with_two_sizes_is_refused() -> None:
    with pytest.raises(ManifestError, match=r"line 2: .* has size 6 here but 5 on line 1"):
        list(parse_manifest([GOOD, f"b.iso,{DIGEST},6"]))


def test_bad_utf8_names_its_line(tmp_path: Path) -> None:
    manifest = tmp_path / "PULP_MANIFEST"
    manifest.write_bytes(GOOD.encode() + b"\nb\xff.iso," + DIGEST.encode() + b",5\n")
    with pytest.raises(ManifestError, match=r"line 2: not UTF-8 \(byte 0xff at column 2\)"):
        list(parse_manifest(manifest))


def test_valid_manifest_parses(tmp_path: Path) -> None:
    manifest = tmp_path / "PULP_MANIFEST"
    text = f"\ufeffa.iso,{DIGEST.upper()},5\r\n\r\n  \r\ndir/b c ä.iso,{'cd' * 32},0\r\n"
    manifest.write_bytes(text.encode("utf-8"))
    assert list(parse_manifest(manifest)) == [
        ManifestEntry(1, "a.iso", DIGEST, 5),
        ManifestEntry(4, "dir/b c ä.iso", "cd" * 32, 0),
    ]


def test_lines_without_newlines_parse() -> None:
    assert [entry.relative_path for entry in parse_manifest([GOOD, f"b.iso,{'cd' * 32},7"])] == ["a.iso", "b.iso"]


def test_a_str_is_not_taken_for_a_file_name() -> None:
    with pytest.raises(TypeError, match="Path or an iterable of lines"):
        parse_manifest("PULP_MANIFEST")


def test_parsing_is_lazy() -> None:
    consumed = 0

    def lines() -> Iterator[str]:
        nonlocal consumed
        for number in range(100_000):
            consumed += 1
            yield f"file-{number}.iso,{number:064x},{number}\n"

    entries = parse_manifest(lines())
    assert consumed == 0
    assert next(entries).relative_path == "file-0.iso"
    assert consumed == 1
    assert sum(1 for _ in entries) == 99_999


def test_sizes_adding_up_past_what_a_database_counts_are_refused() -> None:
    huge = 2**62
    lines = [f"f{n}.iso,{n:064x},{huge}\n" for n in range(3)]
    with pytest.raises(ManifestError, match="line 2: the sizes so far add up to more than 9223372036854775807"):
        list(parse_manifest(lines))
