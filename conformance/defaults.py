"""The conformance suite's own bounds on the servers it starts (conformance.wire), as each package keeps
its servers' bounds in its defaults (pulp_base/defaults.py says why). The rules' parameters stay beside
the rules (conformance/test_contract.py, conformance/checks.py): they are the contract, not settings."""

__all__ = ["WIRE_START_SECONDS"]

WIRE_START_SECONDS = 10.0
"""Seconds a wire server's thread has to start listening, and to stop and join: far above the
milliseconds either takes, so only a server that is stuck fails the test that started it."""
