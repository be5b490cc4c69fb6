"""Processes named `host:pid`, so that whoever finds a task or a workspace can tell whether its owner lives."""

from __future__ import annotations

import os
import socket

__all__ = ["this_process", "is_process_name", "process_alive"]


def this_process() -> str:
    """This process as `host:pid`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def is_process_name(name: str) -> bool:
    """Whether `name` is a `host:pid` of this_process(), rather than, say, an RQ worker's name, which has no
    colon (RQ makes it from the host name and a random suffix joined by dots)."""
    return ":" in name


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
