"""The plan's refusal above --max-bytes advises a sample that fits, from the one asked."""

from __future__ import annotations

import pytest

from harness.experiment.plan import _smaller_sample


@pytest.mark.parametrize(("sample", "share", "advice"), [
    (None, 0.12, "sync a sample (--sample 12%), "),
    ("30%", 0.5, "sync a sample (--sample 15%), "),
    ("30%", 0.9, "sync a sample (--sample 27%), "),
    ("500", 0.5, "sync a smaller sample (--sample 250), "),
    (None, 0.004, ""),
    ("1", 0.5, ""),
])
def test_the_advised_sample_is_the_asked_one_scaled_to_fit(sample: str | None, share: float, advice: str) -> None:
    """At --sample 30% the advice was "(--sample 10%)" whatever the limit; now it scales what was asked."""
    assert _smaller_sample(sample, share) == advice
