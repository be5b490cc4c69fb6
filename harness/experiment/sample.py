"""A seeded, size-stratified sample of a PULP_MANIFEST: benchmark a huge repository on a part of it.

A sync's time depends on its mix of file sizes (many small files cost requests, large ones cost
bandwidth), so a sample must keep that mix, not just a number of files. The method is proportional
stratified sampling (Cochran, "Sampling Techniques", 3rd ed., 1977, ch. 5, "Stratified random
sampling", with proportional allocation): sort the files by size, cut them into strata of
neighbouring sizes, and draw from each stratum a share of the sample equal to its share of the
files. The draw is seeded, and depends only on the manifest's set of lines, not on their order, so
a sample can be named in results.json ("10%", seed 0) and drawn again. The sample is read and
written with `pulp_base.manifest`, the one home of the format.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from pulp_base.manifest import ManifestEntry, parse_manifest, write_manifest

__all__ = [
    "STRATA",
    "SampleError",
    "SampleSize",
    "SampleFacts",
    "parse_sample",
    "choose",
    "sample_manifest",
]

STRATA = 10
"""Most strata a sample is cut into: deciles of file size, enough to hold the size mix of a sample
of 10 files or more; a smaller sample has one stratum per file chosen."""

_ACCEPTED = "give a percentage above 0% and at most 100% (e.g. 10%) or a number of files of at least 1 (e.g. 500)"
_PERCENT = re.compile(r"([0-9]+(?:\.[0-9]+)?|\.[0-9]+)%")
_COUNT = re.compile(r"[0-9]+")


class SampleError(HarnessError, ValueError):
    """A sample size that is neither a percentage in (0, 100] nor a count >= 1; the message says which are."""


@dataclass(frozen=True)
class SampleSize:
    """How much of a manifest to sample: `percent` of its files, or `count` files (exactly one is set).

    `text` is the size as the user gave it ("10%", "500"), for results.json and messages; the
    percentage is a Fraction so that a half rounds up as documented: 2.3% of 1500 files is 34.5 files,
    and 35 are chosen, where floats make it 34.49999999999999 and choose 34.
    """

    text: str
    percent: Fraction | None = None
    count: int | None = None

    def files(self, total: int) -> int:
        """How many of `total` files to choose: round(percent * total / 100), rounding halves up, at
        least 1 (a sample of nothing measures nothing); a count, at most `total`."""
        if self.percent is not None:
            wanted = int(self.percent * total / 100 + Fraction(1, 2))
            return min(total, max(1, wanted))
        assert self.count is not None
        return min(total, self.count)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class SampleFacts:
    """What a sample holds next to what it was drawn from, and how to draw it again (size, seed)."""

    size: str
    seed: int
    files: int
    bytes: int
    sample_files: int
    sample_bytes: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for results.json."""
        return {
            "size": self.size,
            "seed": self.seed,
            "files": self.files,
            "bytes": self.bytes,
            "sample_files": self.sample_files,
            "sample_bytes": self.sample_bytes,
        }


def parse_sample(text: str) -> SampleSize:
    """Read "10%" (a percentage of the files, 0 < p <= 100) or "500" (a number of files, >= 1).

    Anything else, a sign, a unit or an empty sample, is refused with one line saying what is
    accepted, so the command line can print it as one `Error:` line.
    """
    given = text.strip()
    if match := _PERCENT.fullmatch(given):
        percent = Fraction(match.group(1))
        if not 0 < percent <= 100:
            raise SampleError(f"sample {text!r} is not above 0% and at most 100%: {_ACCEPTED}")
        return SampleSize(given, percent=percent)
    if _COUNT.fullmatch(given):
        count = int(given)
        if count < 1:
            raise SampleError(f"sample {text!r} chooses no file: {_ACCEPTED}")
        return SampleSize(given, count=count)
    raise SampleError(f"sample {text!r} is neither a percentage nor a number of files: {_ACCEPTED}")


def choose(entries: Sequence[ManifestEntry], size: SampleSize, seed: int = 0) -> list[ManifestEntry]:
    """The entries of a proportional stratified sample of `size`, in the manifest's line order.

    The entries are sorted by (size, path) before anything is drawn, so the same lines in any order
    give the same sample for the same seed; a different seed gives another sample.
    """
    wanted = size.files(len(entries))
    if wanted >= len(entries):
        return sorted(entries, key=lambda entry: entry.line)
    ordered = sorted(entries, key=lambda entry: (entry.size, entry.relative_path, entry.sha256))
    strata = _strata(ordered, min(wanted, STRATA))
    rng = random.Random(seed)
    chosen = [
        entry
        for stratum, share in zip(strata, _allocate(wanted, [len(stratum) for stratum in strata], rng), strict=True)
        for entry in rng.sample(stratum, share)
    ]
    return sorted(chosen, key=lambda entry: entry.line)


def _strata(ordered: Sequence[ManifestEntry], count: int) -> list[Sequence[ManifestEntry]]:
    """`ordered` (sorted by size) cut into `count` runs of neighbouring sizes, of equal count give or
    take one: quantile strata, which need no choice of size boundaries and suit any size mix."""
    bounds = [len(ordered) * index // count for index in range(count + 1)]
    return [ordered[start:end] for start, end in pairwise(bounds)]


def _allocate(wanted: int, counts: Sequence[int], rng: random.Random) -> list[int]:
    """Split `wanted` over strata in proportion to their `counts` (Cochran's proportional allocation,
    n_h = n * N_h / N), rounded by largest remainder (Hamilton's method) so that the shares add up
    to exactly `wanted`.

    Equal remainders, the rule with strata of equal count, are ordered by `rng`: giving them to the
    first strata would favour small files (were there 20 strata, 10% of the 500 generated files would
    send the ten files over 2 per stratum to the ten smallest strata: 9.5% of the bytes, not 10%).
    """
    total = sum(counts)
    quotas = [Fraction(wanted * count, total) for count in counts]
    shares = [int(quota) for quota in quotas]
    shuffled = rng.sample(range(len(counts)), len(counts))
    by_remainder = sorted(shuffled, key=lambda index: quotas[index] - shares[index], reverse=True)
    for index in by_remainder[: wanted - sum(shares)]:
        shares[index] += 1
    return shares


def sample_manifest(source: Path, size: SampleSize, out: Path, seed: int = 0) -> SampleFacts:
    """Read the manifest `source`, write the sample of `size` drawn with `seed` to `out`, and say
    how much of it the sample holds. A bad line of `source` raises ManifestError, naming it."""
    entries = list(parse_manifest(source))
    chosen = choose(entries, size, seed)
    write_manifest(chosen, out)
    return SampleFacts(
        size=size.text,
        seed=seed,
        files=len(entries),
        bytes=sum(entry.size for entry in entries),
        sample_files=len(chosen),
        sample_bytes=sum(entry.size for entry in chosen),
    )
