"""The ground floor's defaults: how servers are awaited and quoted (pulp_base.servers).

Each server's own bounds (how long it may take to start, how long it gets to stop) are its package's
defaults (fixtures/defaults.py, harness/defaults.py): they differ by server, the polling does not.
"""

__all__ = ["POLL_SECONDS", "TAIL_LINES"]

POLL_SECONDS = 0.05
"""How often a starting server's readiness, or a stopping group's exit, is checked."""
TAIL_LINES = 5
"""How many of a server's last output lines an error quotes."""
