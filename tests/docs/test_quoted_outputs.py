"""Every output the docs quote is what the code prints now (tests/docs/quoted.py says how a block is
marked); a block that has drifted fails with the difference and the command that rewrites it."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.quoted import Places, Quote, places, produce, quotes

QUOTES = quotes()


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Places, Path]]:
    work = tmp_path_factory.mktemp("quoted")
    with places(work) as where:
        yield where, work


def test_the_docs_quote_outputs_at_all() -> None:
    """The walkthrough and the README's main job are the quotes a reader checks first."""
    names = {quote.path.name for quote in QUOTES}
    assert {"tuning-your-remote.md"} <= names, names


def test_an_excerpt_is_some_of_the_lines_in_their_order(tmp_path: Path) -> None:
    def excerpt(text: str) -> Quote:
        return Quote(tmp_path, 0, 0, (), text, excerpt=True)

    printed = "Plan: 2 runs\n| 100 | asyncio |\n| 100 | futures |\n100: no difference\n"
    assert excerpt("| 100 | asyncio |\n...\n100: no difference\n").matches(printed)
    assert not excerpt("100: no difference\n| 100 | asyncio |\n").matches(printed), "the order counts"
    assert not excerpt("| 100 | asyncio | 0.8 |\n").matches(printed), "whole lines, not parts"
    assert not Quote(tmp_path, 0, 0, (), "Plan: 2 runs\n", excerpt=False).matches(printed), "a quote is all"


@pytest.mark.parametrize("quote", QUOTES, ids=lambda quote: quote.name)
def test_a_quoted_output_is_what_the_code_prints(quote: Quote, session: tuple[Places, Path]) -> None:
    produced = produce(quote, *session)
    difference = "".join(difflib.unified_diff(quote.text.splitlines(True), produced.splitlines(True),
                                              "in the docs", "printed now"))
    assert quote.matches(produced), f"{quote.name} has drifted; `python -m tests.docs.quoted --write`:\n{difference}"
