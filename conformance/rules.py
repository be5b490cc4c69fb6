"""The contract's rules by number, as the numbered list of docs/plugins.md has them (a test keeps the two
the same): every failure of the suite starts with the number and the title of the rule it shows broken."""

from __future__ import annotations

__all__ = ["RULES"]

RULES: dict[int, str] = {
    1: "One outcome per request",
    2: "Verified files only",
    3: "No partial file, ever",
    4: "Completion order, streamed",
    5: "Bounded concurrency",
    6: "Bounded hand-off",
    7: "Retries as RetryPolicy decides",
    8: "Timeouts",
    9: "Typed errors that name the URL, and nothing raised",
    10: "Cancellation on close",
    11: "One downloader, several fetches",
    12: "A name",
    13: "One clock",
    14: "Redirects, hop by hop",
    15: "Only http and https, at every hop",
    16: "The address policy, at every hop",
    17: "Credentials stay with the remote's origin",
    18: "The bytes as sent",
    19: "At most max_size bytes",
    20: "Headers and basic auth as configured",
    21: "Through the proxy, with its credentials",
    22: "TLS as configured",
    23: "The rate limit",
    24: "A changing limit, where declared",
}
