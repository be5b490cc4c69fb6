"""Errors as messages for people: one line, and no secret in it (the CLI's `Error:` lines, a task's error)."""

from __future__ import annotations

import re
from typing import Iterable

__all__ = ["one_line", "redact"]

_URL_PASSWORD = re.compile(r"(?<=://)([^/@:\s]*):[^/@\s]*@")


def one_line(error: BaseException) -> str:
    """The error's message with its line breaks (a database driver's, say) folded into spaces."""
    return " ".join(str(error).split())


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with each of `secrets`, and the password of any `scheme://user:password@` URL, as `***`."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _URL_PASSWORD.sub(r"\1:***@", text)
