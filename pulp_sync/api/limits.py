"""What a request may ask of both dialects: a page of at most MAX_LIMIT objects, and a body that parses
into what every database stores (anything else is a 400, never a 500)."""

from __future__ import annotations

import json
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import JSONParser

__all__ = ["MAX_LIMIT", "Pages", "JsonParser"]

MAX_LIMIT = 1000
"""The most objects one page holds: a larger `limit` gets this many (docs/api.md)."""


class Pages(LimitOffsetPagination):
    """Pulp's limit/offset pages (PAGE_SIZE objects unless `limit` says), at most MAX_LIMIT a page."""

    max_limit = MAX_LIMIT


class JsonParser(JSONParser):
    """DRF's JSON parser, but every body it cannot take is a 400 (ParseError): nesting deeper than
    Python's recursion limit (`[[[[...`, which DRF's lets through as a 500), bytes that are not the
    charset's, strings with lone surrogates (valid JSON escapes, but not Unicode: no database can
    store them), and strings or keys with a NUL character (`\\u0000`: PostgreSQL stores none, in text
    or in jsonb, and a 500 would follow; DRF's CharField refuses it, but not in a JSONField such as a
    remote's headers). The one place every body of both dialects passes, so no field is forgotten."""

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
            json.dumps(data, ensure_ascii=False).encode()  # raises on a lone surrogate
            nul = _nul_at(data)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        except UnicodeEncodeError:
            raise ParseError("JSON parse error - a string holds a lone surrogate (\\ud800 to \\udfff)") from None
        if nul is not None:
            raise ParseError(f"JSON parse error - {_described(nul)} holds a NUL character (\\u0000), "
                             "which no database stores")
        return data


def _nul_at(data: Any) -> list[str | int] | None:
    """The keys and indexes leading to the first string in `data` holding a NUL character (a key holding
    one ends them), or None when none does."""
    if isinstance(data, str):
        return [] if "\0" in data else None
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        if isinstance(key, str) and "\0" in key:
            return [key]
        inner = _nul_at(value)
        if inner is not None:
            return [key, *inner]
    return None


def _described(path: list[str | int]) -> str:
    """Where `path` leads in the body, as its reader finds it: `headers[0]["X-A"]`, a field by its name."""
    named = bool(path) and isinstance(path[0], str) and path[0].isprintable()
    first, rest = (str(path[0]), path[1:]) if named else ("the body", path)
    return first + "".join(f"[{json.dumps(step)}]" for step in rest)
