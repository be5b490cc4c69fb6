"""pydantic's errors of a spec as one line each: where the mistake is (the variant, the dotted key within it), the
value given, and what the field expects, in words made from its type (harness.experiment.words); a field of
another kind of variant named with the kind that takes it."""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Mapping
from typing import Any

from pydantic_core import ErrorDetails

from harness.experiment.variant import KIND_FIELDS, KINDS, STARTED_SERVERS, TASKING, VARIANT_KINDS, Variant
from harness.experiment.words import bare, choices, expected, near_miss, one_of, shown

__all__ = ["mistake", "first_mistake"]


def first_mistake(errors: list[ErrorDetails]) -> ErrorDetails:
    """The error to report: an unknown key before a missing one, since a misspelt key is why the other is missing
    (`downlaoder`: "did you mean downloader?", rather than "downloader is missing")."""
    return min(errors, key=lambda error: error["type"] not in ("unexpected_keyword_argument", "extra_forbidden"))


def mistake(error: ErrorDetails, data: Mapping[str, Any], root: type) -> str:
    """One pydantic error of `data` as one line: `variant 'a': env.X = 1: a string`."""
    label, keys, wanted, known = _where(error["loc"], data, root)
    key, value = ".".join(keys), shown(error["input"])
    if error["type"] == "union_tag_invalid":  # a variant's kind that is none of the kinds
        return _unknown_kind(error["loc"], data)
    if error["type"] in ("unexpected_keyword_argument", "extra_forbidden"):
        if label and len(keys) == 1 and keys[0] in _EVERY_FIELD:
            return _foreign_fields(label, error["loc"], data)
        hint = near_miss(keys[-1], known) or f"; the keys are: {', '.join(known)}"
        return f"{label}{key} = {value}: unknown keys are refused (a typo?){hint}"
    if error["type"] == "missing":
        return f"{label}{key} is missing: {(_MISSING.get(key) if label else None) or expected(wanted)}"
    if error["type"] == "value_error":  # a Remote setting's rule (RemoteTable): its own message names it
        where = key if label else f"[{key}]"  # a table of the experiment itself is headed [key] in TOML
        return f"{label}{where}: {error.get('ctx', {}).get('error')}"
    allowed = TASKING if label and keys == ["tasking"] else choices(wanted)
    if allowed:
        return f"{label}{key} {value} is not {one_of(error['input'], allowed)}"
    return f"{label}{key} = {value}: {expected(wanted)}"


_EVERY_FIELD = frozenset(name for fields in KIND_FIELDS.values() for name in fields)


_KIND_NAMES = {"pulp-sync": "a pulp-sync variant", "pulp-sync-rq": 'a pulp-sync variant with tasking = "rq"',
               "command": "a command variant", "pulp-api": "a pulp-api variant"}


_KIND_KEYS = {"pulp-sync": 'kind = "pulp-sync"', "pulp-sync-rq": 'tasking = "rq"', "command": 'kind = "command"',
              "pulp-api": 'kind = "pulp-api"'}
"""Each kind of variant named in a message: as the subject, and by the key that makes a variant of it."""


_MISSING = {"downloader": "name one (`pulp-sync downloaders` lists them), or give kind = \"command\" (with a "
                          "command) or kind = \"pulp-api\" (with a server)",
            "command": "the program's command line, e.g. \"curl --config {curl_config}\"",
            "server": f"one of {', '.join(STARTED_SERVERS)} (started by the harness) or a Pulp server's URL"}
"""What a variant's missing key should hold, said better than its type."""


def _foreign_fields(label: str, loc: tuple[int | str, ...], data: Mapping[str, Any]) -> str:
    """Fields of other kinds given to a variant: what its kind takes, and which kind takes them."""
    tag = str(loc[2])
    raw = data["variants"][int(loc[1])]
    own = KIND_FIELDS[tag]
    foreign = [key for key in raw if key not in own]
    owners = [other for other, taken in KIND_FIELDS.items() if other != tag and set(foreign) <= set(taken)]
    whose = f" ({_KIND_KEYS[owners[0]]} takes {'it' if len(foreign) == 1 else 'them'})" if owners else ""
    return f"{label}{_KIND_NAMES[tag]} takes {', '.join(own)}; not {', '.join(foreign)}{whose}"


def _unknown_kind(loc: tuple[int | str, ...], data: Mapping[str, Any]) -> str:
    raw = data["variants"][int(loc[1])]
    return f"{_variant_label(data, loc[1])}kind {shown(raw.get('kind'))} is not {one_of(raw.get('kind'), KINDS)}"


def _where(loc: tuple[int | str, ...], data: Mapping[str, Any], root: type) -> tuple[str, list[str], Any, list[str]]:
    """The variant (`variant 'a': `, or "" for the experiment), the keys from there to the error, the type
    expected there, and the keys of the table holding the last one."""
    hint: Any = root
    label, keys, known = "", list[str](), list[str]()
    for step in loc:
        if hint is Variant:  # the step is the variant's kind's tag (kind_tag)
            hint = VARIANT_KINDS.get(str(step))
            continue
        hint = bare(hint)
        origin = typing.get_origin(hint)
        if dataclasses.is_dataclass(hint):
            known = [f.name for f in dataclasses.fields(hint)]
            hint = _hints(typing.cast(type, hint)).get(str(step))
            keys.append(str(step))
        elif origin is tuple and typing.get_args(hint)[0] == Variant:
            label, keys, hint = _variant_label(data, step), [], Variant
        elif origin is tuple:
            keys[-1] += f"[{step}]"
            hint = typing.get_args(hint)[0]
        elif isinstance(origin, type) and issubclass(origin, Mapping):
            keys.append(str(step))
            hint = typing.get_args(hint)[1]
        else:  # a union's member, named after the key: the whole union is what is expected
            break
    if label and not keys:  # the variant itself is wrong: say where it is
        label, keys = "", [f"variants[{loc[1]}]"]
    return label, keys, hint, known


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind, include_extras=True)


def _variant_label(data: Mapping[str, Any], index: int | str) -> str:
    """`variant 'a': ` by its name, or `variant 2: ` by its place when it has none."""
    variants = data.get("variants")
    raw = variants[index] if isinstance(variants, list) and isinstance(index, int) else None
    name = raw.get("name") if isinstance(raw, Mapping) else None
    return f"variant {name!r}: " if isinstance(name, str) else f"variant {int(index) + 1}: "
