"""A table of Remote settings in a spec (the experiment's `[remote]`, a variant's `remote`): checked by the rules
of downloaders/settings.py, which the command line and the API apply too, and its JSON Schema made from
downloaders.REMOTE_SETTINGS, so that no setting is restated here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema

from downloaders.settings import REMOTE_SETTINGS, RemoteSetting, remote_setting
from harness.errors import SpecError
from harness.experiment.operator_remote import is_reference
from harness.experiment.words import check, expected, shown

__all__ = ["RemoteTable", "check_remote", "check_remote_of", "plain"]


_VARIANTS_OWN = {"download_concurrency": "download_concurrency",
                 "auto_concurrency": "download_concurrency = \"auto\""}
"""Remote settings a `remote` table refuses, each with what the variant says instead: its concurrency, a number
or "auto" (which turns auto_concurrency on), is the variant's own field, the one setting variants differ in."""


def _remote_table(settings: Mapping[str, Any]) -> Mapping[str, Any]:
    """A `remote` table by the rules of downloaders/settings.py (see `check_remote`): the schema's check."""
    check_remote(settings)
    return settings


def _remote_schema() -> dict[str, Any]:
    """The JSON Schema of a `remote` table, made from downloaders.REMOTE_SETTINGS (each setting's type and
    help), so the schema names every Remote setting without restating one."""
    kinds = {int: "integer", float: "number", bool: "boolean", str: "string", Path: "string", dict: "object"}
    reference = {"type": "string", "pattern": "^(env|file):", "description": "env:VAR or file:PATH"}
    properties: dict[str, Any] = {}
    for setting in REMOTE_SETTINGS:
        if setting.name in _VARIANTS_OWN:
            continue
        typed: dict[str, Any] = {"type": kinds[setting.kind]}
        if setting.kind is dict:
            typed["additionalProperties"] = {"type": "string"}
        choices = [reference] if setting.secret else [typed, reference]
        help_text = setting.help + (" A secret: env:VAR or file:PATH only." if setting.secret else "")
        properties[setting.name] = {"anyOf": choices, "description": help_text}
    return {"type": "object", "additionalProperties": False, "properties": properties,
            "description": "Remote settings (downloaders/settings.py); a value may be given as env:VAR or file:PATH."}


RemoteTable = Annotated[Mapping[str, Any], AfterValidator(_remote_table), WithJsonSchema(_remote_schema())]
"""A table of Remote settings, checked by the rules of downloaders/settings.py."""


def check_remote(settings: Mapping[str, Any]) -> None:
    """Every key a Remote setting, every value of its type (as written: no text for a number) or a
    reference, and passing its setting's rule (downloaders/settings.py, which the command line and the
    API apply too); secrets only by reference, so that no secret is written into a spec or a results
    folder. SpecError naming the setting."""
    check(isinstance(settings, Mapping), "a table of Remote settings, e.g. { rate_limit = 20 }")
    for name, value in settings.items():
        try:
            setting = remote_setting(name)
        except ValueError as error:
            raise SpecError(str(error)) from None
        check(name not in _VARIANTS_OWN, f"set {_VARIANTS_OWN.get(name)} on the variant itself")
        _check_remote_value(setting, value)


def _check_remote_value(setting: RemoteSetting, value: Any) -> None:
    if setting.secret:
        check(is_reference(value), f"{setting.name} is a secret: give it as \"env:VAR\" or \"file:PATH\", "
                                    "never in clear")
        return
    if is_reference(value):
        return
    check(not isinstance(value, str) or setting.kind in (str, Path),
           f"{setting.name} = {shown(value)}: {expected(setting.kind)}, or a reference (env:VAR, file:PATH)")
    try:
        setting.coerce(value)
    except ValueError as error:
        raise SpecError(str(error)) from None


def check_remote_of(settings: Mapping[str, Any], label: str) -> None:
    """`check_remote`, its message after `label`: for experiments made in Python (overrides, sweeps)."""
    try:
        check_remote(settings)
    except SpecError as error:
        raise SpecError(f"{label}: {error}") from None


def plain(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Remote settings as JSON and TOML values (paths as strings, headers as a dict)."""
    return {name: dict(value) if isinstance(value, Mapping) else str(value) if isinstance(value, Path) else value
            for name, value in settings.items()}
