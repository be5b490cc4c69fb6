"""The ground floor's defaults: how servers are awaited and quoted (pulp_base.servers), nginx's start
(pulp_base.nginx), and the width of tables piped to a file (pulp_base.console).

Each server's own bounds (how long it may take to start, how long it gets to stop) are its package's
defaults (fixtures/defaults.py, harness/defaults.py, pulp_sync/defaults.py): they differ by server, the
polling does not. nginx's are here, where it is started for every package.
"""

__all__ = ["POLL_SECONDS", "TAIL_LINES", "NGINX_START_SECONDS", "NGINX_PORT_ATTEMPTS", "NGINX_STOP_SECONDS",
           "PIPED_WIDTH"]

POLL_SECONDS = 0.05
"""How often a starting server's readiness, or a stopping group's exit, is checked."""
TAIL_LINES = 5
"""How many of a server's last output lines an error quotes."""
NGINX_START_SECONDS = 10.0
"""Bound on nginx answering its first request; it starts in milliseconds."""
NGINX_PORT_ATTEMPTS = 5
"""Free ports tried when nginx picks its own: one found free may be taken before nginx binds it."""
NGINX_STOP_SECONDS = 5.0
"""How long nginx gets between SIGTERM (its fast stop, which does not wait for slow readers) and SIGKILL."""
PIPED_WIDTH = 140
"""Columns a table gets when the output is a file or a pipe (a line of text is never wrapped there)."""
