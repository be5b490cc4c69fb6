"""What the suite's tests share: the downloader under test, requests for a fixture tree, and checks.

Every check fails with a message of the form "rule N (its title): downloader 'NAME' did X: it must Y",
N and the title those of docs/plugins.md (`conformance.rules`), so that a plugin author reads which
rule of the contract broke without opening the test. An exception out of `fetch` is reported so too,
as rule 9 with what was raised, not as the traceback of a crashed test.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conformance.rules import RULES
from downloaders import (
    Downloader,
    DownloadError,
    DownloaderSettings,
    DownloadFailure,
    DownloadRequest,
    DownloadResult,
    Outcome,
    TLSConfigurationError,
)
from fixtures.server import RunningServer, StatsJson
from pulp_base.manifest import MANIFEST_NAME, file_url, parse_manifest

__all__ = [
    "FAST_BACKOFF",
    "RUN_AHEAD_FACTOR",
    "Subject",
    "CountingRequests",
    "read_requests",
    "request_for",
    "results_of",
    "failures_of",
    "run_ahead_limit",
    "wait_for_stats",
    "wait_until_still",
    "check_one_outcome_per_request",
    "check_verified",
    "check_no_partial_files",
    "check_all_fetched",
    "check_all_failed",
    "check_one_clock",
]

FAST_BACKOFF = 0.01
"""backoff_base of the suite's fetches: retries are checked, not waited for (Retry-After still counts)."""
RUN_AHEAD_FACTOR = 8
"""A downloader may start at most this many times download_concurrency requests ahead of its consumer."""
LATENCY_BOUNDS = (0.8, 3.0)
"""A latency, in multiples of how long the server held the response, when downloads take turns on one slot:
at least the hold, far less than the turns of the downloads before it."""
CLOCK_SLACK = 0.05
"""Seconds by which a fetch's times may disagree: a thread or a task scheduled late, the hand-off of an outcome."""
RAISES_NOTHING = "yield a request's failure as a DownloadFailure, and raise out of fetch only for a bug or a full disk"
TRUSTS_FILES_AND_PEM = "load ca_cert, client_cert and client_key given as files or as PEM text (build_ssl_context does)"
_SHOWN = 3


@dataclass(frozen=True)
class Subject:
    """The downloader under test: the name it was given on the command line, and its class."""

    name: str
    cls: type[Downloader]

    def make(self, **settings: object) -> Downloader:
        """A fresh downloader, fast backoff unless the test says otherwise.

        A setting it refuses with a ValueError from __init__, as the contract allows, skips the check
        with the refusal as its reason; but the suite's certificates are valid, so refusing them breaks
        rule 22.
        """
        settings.setdefault("backoff_base", FAST_BACKOFF)
        given = DownloaderSettings(**settings)  # type: ignore[arg-type]
        try:
            return self.cls(given)
        except TLSConfigurationError as error:
            what = f"refused the suite's valid certificates ({error})"
            raise AssertionError(self.broke(22, what, TRUSTS_FILES_AND_PEM)) from error
        except ValueError as error:
            pytest.skip(f"downloader {self.name!r} refuses a setting of this check, as the contract allows: {error}")

    def fetch(
        self, requests: Iterable[DownloadRequest], temp_dir: Path, **settings: object
    ) -> Generator[Outcome, None, None]:
        """Start a fetch with a fresh downloader (see `make`)."""
        downloader = self.make(**settings)
        return self.reported(lambda: downloader.fetch(requests, temp_dir))

    def fetch_all(self, requests: Sequence[DownloadRequest], temp_dir: Path, **settings: object) -> list[Outcome]:
        """Run a fetch of these requests (given as an iterator, as the sync pipeline does) to its end."""
        return list(self.fetch(iter(requests), temp_dir, **settings))

    def reported(self, fetch: Callable[[], Iterable[Outcome]]) -> Generator[Outcome, None, None]:
        """The outcomes of `fetch()`, an exception out of it or them reported as the rule it breaks, with
        what it was."""
        try:
            yield from fetch()
        except Exception as error:
            what = f"raised {type(error).__name__} out of fetch ({error})"
            raise AssertionError(self.broke(9, what, RAISES_NOTHING)) from error

    def broke(self, rule: int, what: str, must: str) -> str:
        """The message of a broken rule: which rule, what the downloader did, and what the contract asks."""
        return f"rule {rule} ({RULES[rule]}): downloader {self.name!r} {what}: it must {must}"


class CountingRequests:
    """Requests handed out one at a time, counting how many the downloader has taken."""

    def __init__(self, requests: Sequence[DownloadRequest]) -> None:
        self.requests = list(requests)
        self.taken = 0

    def __iter__(self) -> CountingRequests:
        return self

    def __next__(self) -> DownloadRequest:
        if self.taken >= len(self.requests):
            raise StopIteration
        self.taken += 1
        return self.requests[self.taken - 1]


def read_requests(root: Path, base_url: str, manifest: str = MANIFEST_NAME) -> list[DownloadRequest]:
    """The manifest's lines as requests against `base_url`, the URL of `root` on some server.

    relative_path is the path as the manifest lists it, relative to the manifest's folder.
    """
    manifest_url = base_url + manifest
    return [
        DownloadRequest(file_url(manifest_url, entry.relative_path), entry.relative_path, entry.sha256, entry.size)
        for entry in parse_manifest(root / manifest)
    ]


def request_for(url: str, body: bytes) -> DownloadRequest:
    """A request for `url` that expects exactly `body`, its relative_path the URL's path."""
    return DownloadRequest(url, urlsplit(url).path.lstrip("/"), hashlib.sha256(body).hexdigest(), len(body))


def results_of(outcomes: Iterable[Outcome]) -> list[DownloadResult]:
    return [outcome for outcome in outcomes if isinstance(outcome, DownloadResult)]


def failures_of(outcomes: Iterable[Outcome]) -> list[DownloadFailure]:
    return [outcome for outcome in outcomes if isinstance(outcome, DownloadFailure)]


def run_ahead_limit(download_concurrency: int) -> int:
    """How many requests a downloader may have taken while its consumer holds the first outcome."""
    return RUN_AHEAD_FACTOR * download_concurrency


def wait_for_stats(
    server: RunningServer, ready: Callable[[StatsJson], bool], timeout: float = 10.0
) -> StatsJson:
    """The fixture server's stats once `ready` holds for them, or the last ones read after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    stats = server.stats()
    while not ready(stats) and time.monotonic() < deadline:
        time.sleep(0.02)
        stats = server.stats()
    return stats


def wait_until_still(count: Callable[[], int], still: float, timeout: float) -> int:
    """`count()` once it has not changed for `still` seconds (or `timeout` passed): a downloader at rest."""
    deadline = time.monotonic() + timeout
    last, since = count(), time.monotonic()
    while time.monotonic() - since < still and time.monotonic() < deadline:
        time.sleep(still / 10)
        if (now := count()) != last:
            last, since = now, time.monotonic()
    return last


def check_one_outcome_per_request(
    subject: Subject, requests: Sequence[DownloadRequest], outcomes: Sequence[object]
) -> None:
    """Exactly one DownloadResult or DownloadFailure per request, carrying that very request."""
    strays = [outcome for outcome in outcomes if not isinstance(outcome, (DownloadResult, DownloadFailure))]
    assert not strays, subject.broke(
        1,
        f"yielded {type(strays[0]).__name__} {strays[0]!r}", "yield only DownloadResult and DownloadFailure objects"
    )
    got = Counter(outcome.request for outcome in outcomes)  # type: ignore[attr-defined]
    wanted = Counter(requests)
    missing, extra = wanted - got, got - wanted
    assert not missing and not extra, subject.broke(
        1,
        f"yielded {len(outcomes)} outcome(s) for {len(requests)} request(s)"
        f" (missing: {_paths(missing)}; unasked or repeated: {_paths(extra)})",
        "yield exactly one outcome per request, carrying the request it answers",
    )


def check_verified(subject: Subject, results: Iterable[DownloadResult], temp_dir: Path) -> None:
    """Each result is a complete file in temp_dir whose bytes are the ones requested, and says so."""
    for result in results:
        request, path = result.request, Path(result.path)
        assert path.parent.resolve() == temp_dir.resolve(), subject.broke(
            2,
            f"handed over {path}, which is not in the temp_dir it was given ({temp_dir})",
            "write every file into temp_dir: the store adopts it from there by rename",
        )
        assert path.is_file(), subject.broke(
            2, f"handed over {path}, which does not exist", "hand over complete files, which the caller then owns"
        )
        body = path.read_bytes()
        digest = hashlib.sha256(body).hexdigest()
        if request.sha256 is not None:
            assert digest == request.sha256.lower(), subject.broke(
                2,
                "returned a result whose bytes do not match the requested sha256",
                f"verify digests ({request.url})",
            )
        if request.size is not None:
            assert len(body) == request.size, subject.broke(
                2,
                f"returned a result of {len(body)} bytes where the request says {request.size}",
                f"verify sizes ({request.url})",
            )
        assert (result.sha256, result.size) == (digest, len(body)), subject.broke(
            2,
            f"reported sha256 {result.sha256} and size {result.size} for a file of {digest} and {len(body)}",
            "report the handed-over file's own sha256 and size",
        )
        assert result.attempts >= 1 and result.started <= result.finished, subject.broke(
            2,
            f"reported attempts={result.attempts}, started={result.started}, finished={result.finished}",
            "count attempts from 1 and take started and finished from time.monotonic()",
        )


def check_no_partial_files(subject: Subject, temp_dir: Path, outcomes: Iterable[Outcome], when: str) -> None:
    """Nothing in temp_dir but the files handed over: no partial or unverified download survives."""
    handed_over = {Path(result.path).resolve() for result in results_of(outcomes)}
    left = sorted(path.name for path in temp_dir.iterdir() if path.resolve() not in handed_over)
    assert not left, subject.broke(
        3,
        f"left {len(left)} file(s) it did not hand over in temp_dir {when} ({', '.join(left[:_SHOWN])})",
        "remove every partial or unverified file, whatever ended the download",
    )


def check_all_fetched(
    subject: Subject,
    requests: Sequence[DownloadRequest],
    outcomes: Sequence[Outcome],
    temp_dir: Path,
    *,
    attempts: int | None,
    rule: int,
    must: str,
) -> None:
    """Every request became a verified file, each after exactly `attempts` attempts (None: any number); a
    failure breaks `rule`, which `must` says."""
    check_one_outcome_per_request(subject, requests, outcomes)
    check_verified(subject, results_of(outcomes), temp_dir)
    failures = failures_of(outcomes)
    assert not failures, subject.broke(
        rule,
        f"failed {len(failures)} of {len(requests)} download(s), the first after {failures[0].attempts}"
        f" attempt(s) with {_describe(failures[0].error)}",
        must,
    )
    wrong = [result for result in results_of(outcomes) if attempts is not None and result.attempts != attempts]
    assert not wrong, subject.broke(
        rule, f"reported {wrong[0].attempts} attempt(s) for {wrong[0].request.url} where {attempts} were needed", must
    )
    check_no_partial_files(subject, temp_dir, outcomes, "after a successful fetch")


def check_all_failed(
    subject: Subject,
    requests: Sequence[DownloadRequest],
    outcomes: Sequence[Outcome],
    temp_dir: Path,
    *,
    error: type[DownloadError],
    attempts: int,
    rule: int,
    must: str,
) -> None:
    """Every request failed with `error` (naming its URL) after exactly `attempts` attempts, leaving no file;
    anything else breaks `rule`, which `must` says."""
    check_one_outcome_per_request(subject, requests, outcomes)
    check_verified(subject, results_of(outcomes), temp_dir)
    for outcome in outcomes:
        url = outcome.request.url
        assert isinstance(outcome, DownloadFailure), subject.broke(
            rule, f"returned a result for {url} where a {error.__name__} was due", must
        )
        assert isinstance(outcome.error, error), subject.broke(
            rule, f"failed {url} with {_describe(outcome.error)}", f"report this failure as {error.__name__}; {must}"
        )
        assert url in str(outcome.error), subject.broke(
            9, f"failed {url} with an error that does not name the URL ({outcome.error})", "name the URL in every error"
        )
        assert outcome.attempts == attempts, subject.broke(
            rule, f"gave up on {url} after {outcome.attempts} attempt(s), not {attempts}", must
        )
    check_no_partial_files(subject, temp_dir, outcomes, f"after a {error.__name__}")


def check_one_clock(subject: Subject, results: Sequence[DownloadResult], held: float, elapsed: float) -> None:
    """Results of a fetch at download_concurrency 1 from a server that held every response `held` seconds,
    which took `elapsed`: each latency is one held response, the latencies add up to no more than the
    fetch took, and queue_seconds, when reported, is the rest of the time from started to finished."""
    must = (
        "measure latency from the moment a download holds its concurrency slot to its verified file, and the"
        " wait for the slot apart, as queue_seconds (DownloadJob.holding does)"
    )
    low, high = (held * bound for bound in LATENCY_BOUNDS)
    for result in results:
        url, latency = result.request.url, result.latency
        assert latency is not None, subject.broke(13, f"reported no latency for {url}", must)
        assert low <= latency <= high and latency <= result.seconds + CLOCK_SLACK, subject.broke(
            13,
            f"reported a latency of {latency:.3f} s ({result.seconds:.3f} s from started to finished) for {url},"
            f" whose response the server held {held:g} s, with one download at a time",
            must,
        )
    total = sum(result.latency or 0.0 for result in results)
    assert total <= elapsed + CLOCK_SLACK, subject.broke(
        13,
        f"reported latencies adding up to {total:.2f} s for {len(results)} downloads made one at a time in"
        f" {elapsed:.2f} s: some include the wait for the slot",
        must,
    )
    for result in results:
        waited, rest = result.queue_seconds, result.seconds - (result.latency or 0.0)
        assert waited is None or abs(waited - rest) <= CLOCK_SLACK, subject.broke(
            13,
            f"reported queue_seconds={waited:.3f} for {result.request.url}, where its {result.seconds:.3f} s from"
            f" started to finished, less its latency, leave {rest:.3f} s",
            "report as queue_seconds the time a download waited for its slot: for one attempt, all of the time"
            " from started to finished that is not its latency",
        )


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__} ({error})"


def _paths(requests: Counter[DownloadRequest]) -> str:
    shown = [request.relative_path for request in list(requests)[:_SHOWN]]
    return ", ".join(shown) + (", ..." if len(requests) > _SHOWN else "") if shown else "none"
