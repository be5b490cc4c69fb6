"""The harness's one error base: what a user can fix, with a message that says how.

The command line turns any of them into one `Error:` line and exit status 1; it imports only this
module up front, so mounting `bench` costs `pulp-sync` nothing at start-up.
"""

from __future__ import annotations

__all__ = ["HarnessError"]


class HarnessError(Exception):
    """A spec, a results folder or a reset the user must fix; the message says what to do."""
