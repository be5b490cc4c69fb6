"""The words a spec's mistakes are told in: what a type takes ("a whole number", "a list of strings"), a value
as quoted, "one of a, b" with the nearest choice when a value looks like a typo of it; and `check`, which
raises a SpecError with such a line. The bottom of harness/experiment: it imports nothing of the package."""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from harness.errors import SpecError

__all__ = ["check", "one_of", "near_miss", "shown", "expected", "bare", "choices"]


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SpecError(message)


def one_of(value: object, choices: Sequence[str]) -> str:
    """ "one of a, b", and the nearest choice when `value` looks like a typo of it."""
    return f"one of {', '.join(choices)}{near_miss(value, choices)}"


def near_miss(word: object, choices: Sequence[str]) -> str:
    """ "; did you mean X?" when `word` is close to one of `choices` (difflib's ratio of 0.6 or more)."""
    near = difflib.get_close_matches(word, choices, n=1) if isinstance(word, str) else []
    return f"; did you mean {near[0]}?" if near else ""


_WORDS: dict[Any, str] = {bool: "true or false", int: "a whole number", float: "a number", str: "a string",
                          Path: "a path"}


def choices(hint: Any) -> tuple[str, ...]:
    """The values a Literal field (or an optional one) may take; () for any other type, a union of a type and
    some words among them (`download_concurrency`: a number or "auto"), which `expected` words better."""
    hint = bare(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = [bare(argument) for argument in typing.get_args(hint) if argument is not type(None)]
        if not all(typing.get_origin(member) is Literal for member in members):
            return ()
        return tuple(choice for member in members for choice in typing.get_args(member))
    return typing.get_args(hint) if typing.get_origin(hint) is Literal else ()


def bare(hint: Any) -> Any:
    """`hint` without its Annotated metadata (pydantic's Strict, RemoteTable's validator)."""
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    return hint


def expected(hint: Any) -> str:
    """What a field of type `hint` takes, in words: "a whole number", "a list of strings", "one of a, b"."""
    hint = bare(hint)
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:  # one word is quoted as TOML writes it: a whole number or "auto"
        return f'"{arguments[0]}"' if len(arguments) == 1 else f"one of {', '.join(map(str, arguments))}"
    if origin in (typing.Union, types.UnionType):  # None is no TOML value: not offered; each kind of variant a table
        return " or ".join(dict.fromkeys(expected(argument) for argument in arguments if argument is not type(None)))
    if origin is tuple:
        return f"a list of {expected(arguments[0]).removeprefix('a ')}s"
    if dataclasses.is_dataclass(hint) or isinstance(origin or hint, type) and issubclass(origin or hint, Mapping):
        return "a table"
    return _WORDS.get(hint, "a value")


def shown(value: Any) -> str:
    """A value as the message quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
