"""How long the two commands take, said once the same way wherever a newcomer reads it: the README, the
main job's `--help` and its page (measured from fresh clones on two cores: 6 min 14 s to 7 min for the main
job; for the suite over three xdist workers, 16 minutes alone and 24 beside `stress-ng --cpu 2`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAIN_JOB = "6 to 7 minutes"
SUITE = "16 to 24 minutes"
SAYING_A_DURATION = re.compile(r"(?:about|some|around)?\s*\b(?:\d+|six|seven|eight|nine|ten)\b(?: to \w+)?\s+minutes")


def _claims(path: Path) -> set[str]:
    text = " ".join(path.read_text(encoding="utf-8").split())
    return {match.group().strip() for match in SAYING_A_DURATION.finditer(text)}


def test_the_main_job_takes_the_same_time_everywhere() -> None:
    for name in ("README.md", "manytests.sh", "docs/main-job.md"):
        assert MAIN_JOB in " ".join((ROOT / name).read_text(encoding="utf-8").split()), name
    assert _claims(ROOT / "manytests.sh") == {MAIN_JOB}
    assert _claims(ROOT / "README.md") == {MAIN_JOB, SUITE}, "the README says how long each command takes"


def test_the_main_jobs_page_says_no_other_time_for_it() -> None:
    claims = _claims(ROOT / "docs/main-job.md")
    assert claims - {MAIN_JOB, "about 5 minutes"} == set(), "about 5 minutes is `bench calibrate`'s"
