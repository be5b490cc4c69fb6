"""The harness's one error base: what a user can fix, with a message that says how.

The command line turns any of them into one `Error:` line and exit status 1; it imports only this
module up front, so mounting `bench` costs `pulp-sync` nothing at start-up.
"""

from __future__ import annotations

__all__ = ["HarnessError", "SpecError"]


class HarnessError(Exception):
    """A spec, a results folder or a reset the user must fix; the message says what to do."""


class SpecError(HarnessError, ValueError):
    """The spec cannot be run as written; the message says which value and what to do. Here rather than
    beside the spec, because the modules the spec calls on (the operator's remote, samples) raise it too."""
