"""harness.experiment.sample on real manifests: the generated tree's, the same lines shuffled, and a skewed size mix."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.experiment.sample import SampleError, choose, parse_sample, sample_manifest
from pulp_base.manifest import ManifestEntry, parse_manifest


@pytest.fixture(scope="module")
def manifest_500(tiny_tree: Path) -> Path:
    return tiny_tree / "PULP_MANIFEST_500"


@pytest.fixture(scope="module")
def entries_500(manifest_500: Path) -> list[ManifestEntry]:
    return list(parse_manifest(manifest_500))


def paths(entries: list[ManifestEntry]) -> set[str]:
    return {entry.relative_path for entry in entries}


def total_bytes(entries: list[ManifestEntry]) -> int:
    return sum(entry.size for entry in entries)


def skewed_lines(tiny: int = 900, huge: int = 100) -> list[str]:
    """Manifest lines of `tiny` files of 0.1-2 KB then `huge` of 90-110 MB, as a mirror of packages and ISOs."""
    rng = random.Random("skewed")
    sizes = [rng.randint(100, 2_000) for _ in range(tiny)] + [rng.randint(90_000_000, 110_000_000) for _ in range(huge)]
    files = [(f"{'tiny' if size < 1_000_000 else 'huge'}/file-{n:04d}.bin", size) for n, size in enumerate(sizes)]
    rng.shuffle(files)
    return [f"{name},{hashlib.sha256(name.encode()).hexdigest()},{size}\n" for name, size in files]


def test_ten_percent_of_the_500_manifest_keeps_a_tenth_of_files_and_bytes(manifest_500: Path, tmp_path: Path) -> None:
    facts = sample_manifest(manifest_500, parse_sample("10%"), tmp_path / "PULP_MANIFEST", seed=0)

    assert (facts.files, facts.sample_files) == (500, 50)
    assert facts.bytes == total_bytes(list(parse_manifest(manifest_500)))
    assert facts.sample_bytes / facts.bytes == pytest.approx(0.10, abs=0.02)
    assert facts.as_dict() == {
        "size": "10%", "seed": 0, "files": 500, "bytes": facts.bytes, "sample_files": 50,
        "sample_bytes": facts.sample_bytes,
    }


def test_the_written_sub_manifest_holds_exactly_the_chosen_lines(manifest_500: Path, tmp_path: Path) -> None:
    out = tmp_path / "PULP_MANIFEST"
    size = parse_sample("10%")
    facts = sample_manifest(manifest_500, size, out, seed=3)

    chosen = choose(list(parse_manifest(manifest_500)), size, seed=3)
    source_lines = manifest_500.read_text().splitlines(keepends=True)
    assert out.read_text() == "".join(source_lines[entry.line - 1] for entry in chosen)
    written = list(parse_manifest(out))
    fields = [(entry.relative_path, entry.sha256, entry.size) for entry in chosen]
    assert [(entry.relative_path, entry.sha256, entry.size) for entry in written] == fields
    assert (facts.sample_files, facts.sample_bytes) == (len(written), total_bytes(written))


def test_the_same_seed_gives_the_same_sample_whatever_the_line_order(
    entries_500: list[ManifestEntry], manifest_500: Path, tmp_path: Path
) -> None:
    size = parse_sample("10%")
    first = choose(entries_500, size, seed=7)
    assert choose(entries_500, size, seed=7) == first

    lines = manifest_500.read_text().splitlines(keepends=True)
    random.Random(1).shuffle(lines)
    shuffled = tmp_path / "PULP_MANIFEST_shuffled"
    shuffled.write_text("".join(lines))
    again = choose(list(parse_manifest(shuffled)), size, seed=7)

    assert paths(again) == paths(first)
    assert [entry.line for entry in again] == sorted(entry.line for entry in again), "in the manifest's line order"
    assert paths(choose(entries_500, size, seed=8)) != paths(first)


def test_the_sample_keeps_the_size_percentiles(entries_500: list[ManifestEntry]) -> None:
    whole = np.percentile([entry.size for entry in entries_500], [10, 50, 90])
    for seed in range(5):
        sample = np.percentile([entry.size for entry in choose(entries_500, parse_sample("10%"), seed)], [10, 50, 90])
        assert sample == pytest.approx(whole, rel=0.15), f"seed {seed}"


def test_a_skewed_mix_of_tiny_and_huge_files_is_kept_in_proportion() -> None:
    entries = list(parse_manifest(skewed_lines(tiny=900, huge=100)))

    for seed in range(5):
        chosen = choose(entries, parse_sample("10%"), seed)
        huge = [entry for entry in chosen if entry.relative_path.startswith("huge/")]
        assert (len(chosen), len(huge)) == (100, 10), f"seed {seed}"
        assert total_bytes(chosen) / total_bytes(entries) == pytest.approx(0.10, abs=0.01)


def test_a_few_files_are_drawn_from_across_the_sizes(entries_500: list[ManifestEntry]) -> None:
    """Three files, three strata: one from each third of the sizes, smallest to largest."""
    by_size = sorted(entries_500, key=lambda entry: (entry.size, entry.relative_path))
    rank = {entry.relative_path: index for index, entry in enumerate(by_size)}

    chosen = choose(entries_500, parse_sample("3"), seed=0)

    assert sorted(rank[entry.relative_path] * 3 // len(by_size) for entry in chosen) == [0, 1, 2]


def test_counts_one_file_all_files_and_rounding(entries_500: list[ManifestEntry]) -> None:
    assert len(choose(entries_500, parse_sample("1"))) == 1
    assert choose(entries_500, parse_sample("501")) == entries_500
    assert choose(entries_500, parse_sample("100%")) == entries_500
    assert len(choose(entries_500, parse_sample("0.1%"))) == 1, "0.5 files rounds up"
    assert len(choose(entries_500, parse_sample("12.5%"))) == 63, "62.5 files rounds half up"
    assert len(choose(entries_500[:10], parse_sample("1%"))) == 1, "a sample holds at least one file"
    assert choose([], parse_sample("10%")) == []
    assert parse_sample("2.3%").files(1500) == 35, "34.5 exactly, where floats say 34.49999999999999"


def test_parse_sample_reads_percentages_and_counts() -> None:
    ten = parse_sample(" 10% ")
    assert (str(ten), ten.percent, ten.count) == ("10%", 10, None)
    five_hundred = parse_sample("500")
    assert (str(five_hundred), five_hundred.percent, five_hundred.count) == ("500", None, 500)
    assert parse_sample("0.5%").percent == pytest.approx(0.5)


@pytest.mark.parametrize("text", ["0", "0%", "101%", "abc", "-5", "", "10 %", "5.%", "1e3", "+5"])
def test_bad_sizes_are_one_line_saying_what_is_accepted(text: str) -> None:
    with pytest.raises(SampleError) as raised:
        parse_sample(text)

    message = str(raised.value)
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, HarnessError)
    assert "\n" not in message and repr(text) in message
    assert "percentage above 0% and at most 100% (e.g. 10%)" in message
    assert "number of files of at least 1 (e.g. 500)" in message
