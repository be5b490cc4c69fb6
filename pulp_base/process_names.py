"""Processes named `host:pid`, so that whoever finds a task or a workspace can tell whether its owner lives."""

from __future__ import annotations

import os
import socket

__all__ = ["this_process", "process_alive"]


def this_process() -> str:
    """This process as `host:pid`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_alive(process: str) -> bool | None:
    """Whether the process `host:pid` still exists; None when that cannot be seen from here (another host)."""
    host, _, pid = process.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
