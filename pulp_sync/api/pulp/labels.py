"""Pulp's labels, which pulp-sync does not keep: every object shows `pulp_labels` as `{}`, so that pulp-cli's
`label show` answers that no such label is set, and a request setting one is refused in one line (the
`set_label` and `unset_label` operations are declared as not served: not_served.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

__all__ = ["NoLabelsField", "NO_LABELS"]

NO_LABELS = "labels are not supported by pulp-sync"
"""Why a request with labels is refused."""


@extend_schema_field({"type": "object", "additionalProperties": {"type": "string", "nullable": True}})
class NoLabelsField(serializers.Field):
    """`pulp_labels`: shown as `{}`; taken only empty (pulp-cli sends `{}` when asked to clear them)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", "Always {}: " + NO_LABELS + ".")
        super().__init__(source="*", required=False, **kwargs)

    def to_internal_value(self, labels: Any) -> dict[str, Any]:
        if labels not in ({}, None):
            raise serializers.ValidationError(NO_LABELS)
        return {}

    def to_representation(self, _: Any) -> dict[str, str]:
        return {}
