"""What a request may ask of both dialects: a page of at most MAX_LIMIT objects, and a body that parses
(anything else is a 400, never a 500)."""

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
    charset's, and strings with lone surrogates (valid JSON escapes, but not Unicode: no database
    can store them)."""

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
            json.dumps(data, ensure_ascii=False).encode()  # raises on a lone surrogate
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        except UnicodeEncodeError:
            raise ParseError("JSON parse error - a string holds a lone surrogate (\\ud800 to \\udfff)") from None
        return data
