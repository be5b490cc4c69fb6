"""pulp_base.servers on real child processes: ready when the check holds, a sentence quoting the output
when the server exits or never gets ready, and a stop that takes what the server forked with it."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pulp_base import servers


class Refused(Exception):
    """The caller's own error type, which wait_until raises."""


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def line_in(log_path: Path, prefix: str) -> str | None:
    for line in log_path.read_text(errors="replace").splitlines():
        if line.startswith(prefix):
            return line.removeprefix(prefix)
    return None


def test_the_ready_check_gives_its_value_and_the_stop_ends_the_whole_group(tmp_path: Path) -> None:
    log_path = tmp_path / "server.log"
    # the server forks a grandchild that ignores nothing and sleeps: stopping the group must take it too
    code = ("import os, sys, time\n"
            "child = os.fork()\n"
            "if child == 0:\n"
            "    time.sleep(600)\n"
            "print('grandchild', child, flush=True)\n"
            "print('ready at', 'http://127.0.0.1:1/', flush=True)\n"
            "time.sleep(600)\n")
    with open(log_path, "wb") as log:
        process = servers.start(python(code), log)
    try:
        url = servers.wait_until(lambda: line_in(log_path, "ready at "), {"the server": process}, within=60,
                                 what="the server did not say where it is", output=lambda: servers.tail(log_path),
                                 failure=Refused)
        grandchild = int(line_in(log_path, "grandchild ") or 0)
    finally:
        servers.stop_groups([process], patience=10)

    assert url == "http://127.0.0.1:1/"
    assert process.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.kill(grandchild, 0)


def test_a_server_that_exits_at_start_is_the_callers_error_quoting_its_output() -> None:
    with tempfile.TemporaryFile() as log:
        process = servers.start(python("import sys; print('port 1 is taken', file=sys.stderr); sys.exit(3)"), log)
        with pytest.raises(Refused) as raised:
            servers.wait_until(lambda: None, {"the server": process}, within=60, what="never",
                               output=lambda: servers.tail(log), failure=Refused)

    assert str(raised.value) == "the server exited with status 3 at start; its output: port 1 is taken"


def test_a_server_never_ready_is_an_error_after_the_bound_and_is_stopped_by_the_caller() -> None:
    with tempfile.TemporaryFile() as log:
        process = servers.start(python("import time; print('starting', flush=True); time.sleep(600)"), log)
        started = time.monotonic()
        try:
            expected = r"the server did not answer within 0.5 s \(is the machine overloaded\?\); its output: starting"
            with pytest.raises(Refused, match=expected):
                servers.wait_until(lambda: None, {"the server": process}, within=0.5, what="the server did not answer",
                                   output=lambda: servers.tail(log), failure=Refused)
        finally:
            servers.stop_groups([process], patience=10)

    assert time.monotonic() - started < 60  # a generous bound: the wait ended, it did not run for 600 s
    assert process.returncode is not None


def test_a_server_that_ignores_sigterm_is_killed_after_the_patience() -> None:
    with tempfile.TemporaryFile() as log:
        code = (
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
            " print('up', flush=True); time.sleep(600)"
        )
        process = servers.start(python(code), log)
        servers.wait_until(lambda: "up" in servers.tail(log) or None, {"the server": process}, within=60, what="never",
                           output=lambda: servers.tail(log), failure=Refused)
        servers.stop_groups([process], patience=0.2)

    assert process.returncode == -9


@pytest.mark.parametrize(("text", "lines", "tail"), [("a\n\n b \nc\n", 2, "b | c"), ("", 5, "(no output)")])
def test_tail_keeps_the_last_lines_on_one_line(text: str, lines: int, tail: str) -> None:
    assert servers.tail(text, lines) == tail
