"""Errors as messages for people: one line, and no secret in it (the CLI's `Error:` lines, a task's error)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from downloaders.errors import printable

__all__ = ["one_line", "redact", "for_the_record", "MAX_RECORDED_CHARS"]

MAX_RECORDED_CHARS = 1000
"""The longest error a task keeps: enough for every message of ours with its URL, too short for a remote
to use the task's error as a window onto what it answered (a service that is not HTTP quotes itself in
the HTTP library's error: syncing from a Redis or an admin port must not read that port back)."""

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


def for_the_record(text: str, limit: int = MAX_RECORDED_CHARS) -> str:
    """`text` as an error that is stored and shown to API users: every character that does not print (raw
    bytes of an answer, escape sequences) written as its escape, and cut to `limit` characters."""
    shown = printable(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
