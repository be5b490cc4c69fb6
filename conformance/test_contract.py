"""The downloader contract as tests: `pytest --pulp-sync-downloader NAME`, or `python -m conformance NAME`.

Each test gets `subject`, the downloader under test, and servers on 127.0.0.1: the fixture server
serving a small generated file-example tree, healthy or with the network profile and faults the test
needs, or the suite's own `Origin`s (conformance.wire), which answer as the test scripts them and
record what each request carried. The tests come in the order of the rules of docs/plugins.md
(`conformance.rules`); each failure message starts with the number of the rule that broke.
"""

from __future__ import annotations

import gzip
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing
from pathlib import Path
from typing import TypedDict
from urllib.parse import urlsplit

import pytest

from conformance import wire
from conformance.checks import (
    RUN_AHEAD_FACTOR,
    TRUSTS_FILES_AND_PEM,
    CountingRequests,
    Subject,
    check_all_failed,
    check_all_fetched,
    check_no_partial_files,
    check_one_clock,
    check_one_outcome_per_request,
    check_verified,
    read_requests,
    request_for,
    results_of,
    run_ahead_limit,
    wait_for_stats,
    wait_until_still,
)
from conformance.plugin import downloader_names, resolve
from downloaders import (
    AddressPolicy,
    AddressRefused,
    BodyTooLarge,
    ConcurrencyLimit,
    DigestMismatch,
    DownloadConnectionError,
    Downloader,
    DownloadError,
    DownloaderSettings,
    DownloadFailure,
    DownloadRequest,
    DownloadResult,
    DownloadTimeout,
    HttpStatusError,
    SizeMismatch,
    TLSVerificationError,
    UnsupportedURL,
    adapts,
)
from downloaders.defaults import MAX_REDIRECTS
from fixtures.faults import FaultConfig
from fixtures.generate import generate_tree
from fixtures.limits import ConnectionLimit
from fixtures.profiles import PROFILES, NetworkProfile
from fixtures.server import RunningServer, serve_in_background
from pulp_base.manifest import MANIFEST_NAME

TREE_SCALE = 0.005
"""About 2 MB per 100 files of the PULP_MANIFEST_N sets, and 10,000 small files."""
HUNDRED = f"{MANIFEST_NAME}_100"
"""The seed's first set of the tree: 100 files, about 2 MB here."""
MANY_SMALL = f"many-small/{MANIFEST_NAME}"
"""The tree's 10,000 small files, in folders."""
HOLD_SECONDS = 1.0
"""How long a consumer holds still: a downloader that runs ahead of it gets that long to show it."""
RETRY_AFTER = 1
"""Seconds a 429 asks the client to wait."""
CONCURRENCY = 4
"""download_concurrency where a test counts requests in flight or ahead of the consumer."""
MANY = 2000
"""Small files fetched at once by the test of many small files."""
AHEAD = 500
"""Requests of the tests that watch how far ahead of its consumer a downloader runs: far more than it may."""
BODY = b"a body of the conformance suite\n" * 32
"""What the suite's own servers serve: 1 kB, tiny on purpose, since those tests look at the requests."""
TRICKLE_BODY = bytes(range(256)) * 240
"""60 kB that the trickling server sends TRICKLE_STEP bytes at a time every TRICKLE_EVERY s: 3 s in all."""
TRICKLE_STEP, TRICKLE_EVERY = 1024, 0.05
TOTAL_TIMEOUT = 0.5
"""total_timeout of the trickle test that sets it."""
ALLOWANCE, DERIVED_DEADLINE = 0.3, 0.8
"""deadline_allowance of the trickle test without total_timeout, and the deadline its min_rate makes."""
DEADLINE_SLACK = 1.0
"""Seconds past a deadline a downloader may take to give up (a read returns every TRICKLE_EVERY s)."""
CONNECT_TIMEOUT, CONNECT_SLACK = 0.3, 1.0
"""The connect timeout of the connect test, and how much longer it may take to give up."""
UNANSWERED_FOR = 2.5
"""Seconds the connect test's port drops SYNs before it closes, so a downloader without a timeout ends too."""
HELD = 0.1
"""Seconds the server of the clock test holds every response before its first byte."""
TURNS = 6
"""Small files the clock test fetches one at a time: a clock that counts the turns before a download's own
reads up to TURNS x HELD."""
BACKOFF_MAX = 0.3
"""backoff_max of the tests of a long Retry-After: it caps the wait (RetryPolicy.delay)."""
LONG_RETRY_AFTER = 3
"""Seconds a 429 asks for in those tests, 10 times backoff_max."""
BACKOFF_SLACK = 0.7
"""Seconds a retry may come later than its backoff: a timer or a loop that looks every so often."""
STALLED = 200
"""Requests of the test that closes a fetch stalled on its consumer: many more than it may run ahead."""
STILL = 0.3
"""Seconds without a new request after which a downloader is taken to have stalled on its consumer."""
MAX_SIZE = 1000
"""max_size of the request whose body is 64 kB."""
RATE, RATED = 10.0, 6
"""rate_limit of the rate test, and the requests it starts: at least 0.5 s apart from first to last."""
RATE_SLACK = 0.8
"""The share of (RATED - 1) / RATE that the starts of the rate test must span at least."""
MOST, ALLOWED = 8, 2
"""max_concurrency of the tests of a changing limit, and the requests at once the limited remote allows."""
CREDENTIALS: dict[str, object] = {
    "username": "conformance",
    "password": "the-password",
    "headers": {"X-Conformance-Token": "the-token", "Cookie": "session=from-the-settings"},
}
"""Settings every request header of which must stay with the remote's origin."""
PRIVATE = ("Authorization", "X-Conformance-Token", "Cookie")
PROXY_CREDENTIALS = {"proxy_username": "proxy-user", "proxy_password": "proxy-password"}
NOT_A_CERTIFICATE = "-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n"

TRANSIENT = {
    "5xx": (FaultConfig(http_5xx=1.0, max_per_path=1), {}),
    "reset": (FaultConfig(reset=1.0, max_per_path=1), {}),
    "truncate": (FaultConfig(truncate=1.0, max_per_path=1), {}),
    "corrupt": (FaultConfig(corrupt=1.0, max_per_path=1), {}),
    "stall": (FaultConfig(stall=1.0, max_per_path=1, stall_seconds=30), {"sock_read_timeout": 1.0}),
}


class _Serving(TypedDict, total=False):
    """How `serve_in_background` is to serve a case's tree."""

    profile: NetworkProfile
    faults: FaultConfig


READ_TIMEOUTS: dict[str, tuple[_Serving, int, str]] = {
    "stalled-body": (
        {"faults": FaultConfig(stall=1.0, stall_seconds=30)},
        1,
        "end a read that waits longer than sock_read_timeout for the next bytes, and retry it",
    ),
    "no-answer": (
        {"profile": NetworkProfile(latency=30.0, name="unanswering")},
        0,
        "apply sock_read_timeout to the wait for the response too",
    ),
}
PERSISTENT: dict[str, tuple[FaultConfig, type[DownloadError], int, int]] = {
    "5xx": (FaultConfig(http_5xx=1.0), HttpStatusError, 2, 3),
    "reset": (FaultConfig(reset=1.0), DownloadConnectionError, 2, 3),
    "truncate": (FaultConfig(truncate=1.0), DownloadConnectionError, 2, 3),
    "corrupt": (FaultConfig(corrupt=1.0), DigestMismatch, 5, 2),
}
"""Faults on every attempt: the error each must end in, max_retries, and the attempts that makes."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test that takes `subject` runs once per downloader: those named by the option, else all installed."""
    if "subject" in metafunc.fixturenames:
        names = downloader_names(metafunc.config)
        metafunc.parametrize("subject", [Subject(name, resolve(name)) for name in names], ids=names)


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("conformance-tree")
    generate_tree(root, scale=TREE_SCALE)
    return root


@pytest.fixture(scope="session")
def server(tree: Path) -> Iterator[RunningServer]:
    """The fixture server on the loopback profile, without faults, shared by the tests that need no other."""
    with serve_in_background(tree) as running:
        yield running


@pytest.fixture
def temp_dir(tmp_path: Path) -> Path:
    """The temp_dir given to fetch: empty, so whatever a test finds in it the downloader left there."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    return folder


@pytest.fixture
def origins() -> Iterator[Callable[..., wire.Origin]]:
    """`origins(context=None)` starts an Origin of the test's own (https with an SSL context), stopped after it."""
    with ExitStack() as stack:
        yield lambda context=None: stack.enter_context(wire.serving(wire.Origin(), context))


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> wire.Certificates:
    return wire.make_certificates(tmp_path_factory.mktemp("conformance-tls"))


# --- rules 1 to 4: outcomes -------------------------------------------------------------------------------


def test_fetches_every_file_verified(subject: Subject, tree: Path, server: RunningServer, temp_dir: Path) -> None:
    requests = read_requests(tree, server.url, HUNDRED)
    outcomes = list(subject.fetch(requests, temp_dir))
    must = "fetch any iterable of requests from a healthy server"
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=1, must=must)


def test_many_small_files(subject: Subject, tree: Path, server: RunningServer, temp_dir: Path) -> None:
    requests = read_requests(tree, server.url, MANY_SMALL)[:MANY]
    outcomes = subject.fetch_all(requests, temp_dir, download_concurrency=20)
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=1, must="fetch thousands of small files")


@pytest.mark.parametrize("offset", [-1, 1], ids=["body-longer", "body-shorter"])
def test_size_mismatch_is_typed(
    subject: Subject, tree: Path, server: RunningServer, temp_dir: Path, offset: int
) -> None:
    request = read_requests(tree, server.url)[0]
    assert request.size is not None
    requests = [DownloadRequest(request.url, request.relative_path, request.sha256, request.size + offset)]
    outcomes = subject.fetch_all(requests, temp_dir)
    must = "fail a body of another size with SizeMismatch, retried once"
    check_all_failed(subject, requests, outcomes, temp_dir, error=SizeMismatch, attempts=2, rule=2, must=must)
    expected = outcomes[0].error.expected  # type: ignore[union-attr]
    assert expected == request.size + offset, subject.broke(
        2,
        f"reported an expected size of {expected} where the request says {request.size + offset}",
        "report the request's size as SizeMismatch.expected",
    )


def test_outcomes_are_handed_over_as_they_complete(subject: Subject, tree: Path, temp_dir: Path) -> None:
    faults = FaultConfig(stall=0.25, stall_seconds=30)
    with serve_in_background(tree, faults=faults) as running:
        manifest = read_requests(tree, running.url, HUNDRED)
        stalled = [request for request in manifest if faults.pick(request.relative_path, 0)]
        quick = [request for request in manifest if not faults.pick(request.relative_path, 0)]
        requests = stalled[:1] + quick[:9]  # which requests stall depends on (seed, path) alone
        settings = {"download_concurrency": CONCURRENCY, "sock_read_timeout": 3.0, "max_retries": 0}
        with closing(subject.fetch(iter(requests), temp_dir, **settings)) as outcomes:
            first = next(outcomes)
            stats = wait_for_stats(running, lambda seen: seen["faults"]["stall"] >= 1)
            rest = list(outcomes)
    check_one_outcome_per_request(subject, requests, [first, *rest])
    assert first.request != requests[0], subject.broke(
        4,
        "yielded first the outcome of a request still stalled while others had completed",
        "yield outcomes in completion order, not in request order",
    )
    assert stats["in_flight"], subject.broke(
        4, "yielded its first outcome only once every request had ended", "yield each outcome as soon as it completes"
    )
    assert rest[-1].request == requests[0] and isinstance(rest[-1], DownloadFailure), subject.broke(
        4, "did not end with the stalled request's DownloadTimeout", "yield outcomes in completion order"
    )
    check_verified(subject, results_of([first, *rest]), temp_dir)
    check_no_partial_files(subject, temp_dir, [first, *rest], "after a stalled body")


# --- rules 5 and 6: bounds --------------------------------------------------------------------------------


def test_concurrency_is_bounded_as_the_server_sees_it(subject: Subject, tree: Path, temp_dir: Path) -> None:
    with serve_in_background(tree, profile=PROFILES["wan"]) as running:
        requests = read_requests(tree, running.url, HUNDRED)[:40]
        outcomes = subject.fetch_all(requests, temp_dir, download_concurrency=CONCURRENCY)
        seen = running.stats()["max_in_flight"]
    must = "fetch every file of a slow server"
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=5, must=must)
    assert seen <= CONCURRENCY, subject.broke(
        5,
        f"had {seen} requests in flight at once at download_concurrency={CONCURRENCY}, as the server saw them",
        "keep at most download_concurrency requests in flight",
    )
    assert seen >= 2, subject.broke(
        5,
        f"never had two requests in flight at download_concurrency={CONCURRENCY} (40 files, 40 ms to first byte)",
        "download concurrently, up to download_concurrency at once",
    )


def test_a_download_backing_off_holds_no_slot(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    origin = origins()
    too_many = wire.status(429, {"Retry-After": str(LONG_RETRY_AFTER)})
    backing_off = request_for(origin.answer("/backs-off", too_many, wire.body(BODY)), BODY)
    waiting = request_for(origin.answer("/waits", wire.body(BODY)), BODY)
    requests = [backing_off, waiting]
    outcomes = subject.fetch_all(requests, temp_dir, download_concurrency=1, backoff_max=BACKOFF_MAX)
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=None, rule=5, must="retry a 429")
    retried, other = origin.requests("/backs-off")[-1].at, origin.requests("/waits")[0].at
    assert other < retried, subject.broke(
        5,
        f"sent the one other request {other - retried:.2f} s after the retry of a 429, at download_concurrency=1",
        "release a download's slot while it backs off, for another download to use",
    )


def test_a_slow_consumer_holds_the_downloader_back(subject: Subject, tree: Path, temp_dir: Path) -> None:
    limit = run_ahead_limit(CONCURRENCY)
    with serve_in_background(tree) as running:
        requests = CountingRequests(read_requests(tree, running.url, MANY_SMALL)[:AHEAD])
        with closing(subject.fetch(requests, temp_dir, download_concurrency=CONCURRENCY)) as outcomes:
            first = next(outcomes)
            time.sleep(HOLD_SECONDS)
            taken, made, files = requests.taken, running.stats()["requests_total"], len(list(temp_dir.iterdir()))
            rest = list(outcomes)
    ahead = f"while its consumer held the first outcome for {HOLD_SECONDS:g} s"
    must = f"hand outcomes over through a bounded queue: at most {limit} ({RUN_AHEAD_FACTOR} x download_concurrency)"
    assert taken <= limit, subject.broke(6, f"took {taken} of {AHEAD} requests from the iterable {ahead}", must)
    assert made <= limit, subject.broke(6, f"sent {made} requests {ahead}", must)
    assert files <= limit, subject.broke(6, f"had {files} files in temp_dir {ahead}", must)
    must = "go on once the consumer does"
    check_all_fetched(subject, requests.requests, [first, *rest], temp_dir, attempts=1, rule=6, must=must)


# --- rule 7: retries --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", sorted(TRANSIENT))
def test_transient_fault_then_success(subject: Subject, tree: Path, temp_dir: Path, fault: str) -> None:
    faults, settings = TRANSIENT[fault]
    with serve_in_background(tree, faults=faults) as running:
        requests = read_requests(tree, running.url)[:10]
        outcomes = subject.fetch_all(requests, temp_dir, download_concurrency=CONCURRENCY, **settings)
    must = f"retry after a {fault} (RetryPolicy decides)"
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=2, rule=7, must=must)


def test_429_waits_for_retry_after(subject: Subject, tree: Path, temp_dir: Path) -> None:
    with serve_in_background(
        tree, faults=FaultConfig(http_429=1.0, max_per_path=1, retry_after=RETRY_AFTER)
    ) as running:
        requests = read_requests(tree, running.url)[:3]
        started = time.monotonic()
        outcomes = subject.fetch_all(requests, temp_dir)
        elapsed = time.monotonic() - started
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=2, rule=7, must="retry after a 429")
    assert elapsed >= 0.95 * RETRY_AFTER, subject.broke(
        7,
        f"retried 429s with 'Retry-After: {RETRY_AFTER}' and was done after {elapsed:.2f} s",
        "wait as long as Retry-After asks before the next attempt (RetryPolicy.delay does)",
    )


def test_backoff_max_caps_the_wait_for_retry_after(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    origin = origins()
    too_many = wire.status(429, {"Retry-After": str(LONG_RETRY_AFTER)})
    requests = [request_for(origin.answer("/capped", too_many, wire.body(BODY)), BODY)]
    outcomes = subject.fetch_all(requests, temp_dir, backoff_max=BACKOFF_MAX)
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=2, rule=7, must="retry after a 429")
    first, retry = (seen.at for seen in origin.requests("/capped"))
    waited = retry - first
    assert 0.8 * BACKOFF_MAX <= waited <= BACKOFF_MAX + BACKOFF_SLACK, subject.broke(
        7,
        f"retried a 429 with 'Retry-After: {LONG_RETRY_AFTER}' {waited:.2f} s later, at backoff_max={BACKOFF_MAX}",
        "wait as RetryPolicy.delay says: as long as Retry-After asks, but no longer than backoff_max",
    )


@pytest.mark.parametrize("fault", sorted(PERSISTENT))
def test_persistent_fault_fails_after_the_retries_it_allows(
    subject: Subject, tree: Path, temp_dir: Path, fault: str
) -> None:
    faults, error, max_retries, attempts = PERSISTENT[fault]
    with serve_in_background(tree, faults=faults) as running:
        requests = read_requests(tree, running.url)[:3]
        outcomes = subject.fetch_all(requests, temp_dir, max_retries=max_retries)
    must = "make 1 + max_retries attempts, or 2 after a size or digest mismatch, then give up (RetryPolicy decides)"
    check_all_failed(subject, requests, outcomes, temp_dir, error=error, attempts=attempts, rule=7, must=must)


def test_not_found_fails_at_once_with_the_url(subject: Subject, server: RunningServer, temp_dir: Path) -> None:
    requests = [DownloadRequest(server.url + "files/no-such-file.bin", "files/no-such-file.bin")]
    outcomes = subject.fetch_all(requests, temp_dir)
    must = "never retry a 404"
    check_all_failed(subject, requests, outcomes, temp_dir, error=HttpStatusError, attempts=1, rule=7, must=must)
    status = outcomes[0].error.status  # type: ignore[union-attr]
    assert status == 404, subject.broke(9, f"reported status {status} for a 404", "carry the server's status")


# --- rule 8: timeouts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(READ_TIMEOUTS))
def test_read_timeout(subject: Subject, tree: Path, temp_dir: Path, case: str) -> None:
    server, max_retries, must = READ_TIMEOUTS[case]
    with serve_in_background(tree, **server) as running:
        requests = read_requests(tree, running.url)[:2]
        outcomes = subject.fetch_all(requests, temp_dir, sock_read_timeout=0.5, max_retries=max_retries)
    error, attempts = DownloadTimeout, 1 + max_retries
    check_all_failed(subject, requests, outcomes, temp_dir, error=error, attempts=attempts, rule=8, must=must)


@pytest.mark.parametrize("timeout", ["connect_timeout", "sock_connect_timeout"])
def test_a_connect_that_never_completes_times_out(subject: Subject, temp_dir: Path, timeout: str) -> None:
    connect: dict[str, object] = {"connect_timeout": None, "sock_connect_timeout": None, timeout: CONNECT_TIMEOUT}
    with wire.unanswered_connects(UNANSWERED_FOR) as url:
        requests = [DownloadRequest(url, "never")]
        started = time.monotonic()
        outcomes = subject.fetch_all(requests, temp_dir, max_retries=0, **connect)
        elapsed = time.monotonic() - started
    must = f"give a connect up after {timeout}, with a DownloadTimeout"
    assert elapsed < CONNECT_TIMEOUT + CONNECT_SLACK, subject.broke(
        8, f"took {elapsed:.1f} s over a connect that never completed, at {timeout}={CONNECT_TIMEOUT:g}", must
    )
    check_all_failed(subject, requests, outcomes, temp_dir, error=DownloadTimeout, attempts=1, rule=8, must=must)


def test_total_timeout_ends_a_trickling_body(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    request = request_for(origins().answer("/trickle", _trickle()), TRICKLE_BODY)
    started = time.monotonic()
    outcomes = subject.fetch_all([request], temp_dir, total_timeout=TOTAL_TIMEOUT, min_rate=None, max_retries=0)
    elapsed = time.monotonic() - started
    must = "end each attempt after total_timeout, however steadily its bytes come"
    assert elapsed < TOTAL_TIMEOUT + DEADLINE_SLACK, subject.broke(
        8, f"held a body trickling for {elapsed:.1f} s at total_timeout={TOTAL_TIMEOUT:g}", must
    )
    check_all_failed(subject, [request], outcomes, temp_dir, error=DownloadTimeout, attempts=1, rule=8, must=must)


def test_a_trickling_body_ends_at_the_derived_deadline(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    request = request_for(origins().answer("/trickle", _trickle()), TRICKLE_BODY)
    min_rate = len(TRICKLE_BODY) / (DERIVED_DEADLINE - ALLOWANCE)
    started = time.monotonic()
    outcomes = subject.fetch_all(
        [request], temp_dir, total_timeout=None, min_rate=min_rate, deadline_allowance=ALLOWANCE, max_retries=0
    )
    elapsed = time.monotonic() - started
    must = (
        "end each attempt by deadline_seconds(request, settings), which without total_timeout is"
        " deadline_allowance + size / min_rate"
    )
    assert elapsed < DERIVED_DEADLINE + DEADLINE_SLACK, subject.broke(
        8,
        f"held a trickling body for {elapsed:.1f} s, with no total_timeout and a deadline of {DERIVED_DEADLINE:g} s"
        f" ({ALLOWANCE:g} s + {len(TRICKLE_BODY):,} bytes at {min_rate:,.0f} B/s)",
        must,
    )
    check_all_failed(subject, [request], outcomes, temp_dir, error=DownloadTimeout, attempts=1, rule=8, must=must)


def _trickle() -> wire.Answer:
    return wire.trickle(TRICKLE_BODY, TRICKLE_STEP, TRICKLE_EVERY)


# --- rule 9: errors ---------------------------------------------------------------------------------------


def test_only_http_and_https(subject: Subject, temp_dir: Path) -> None:
    for url in ("file:///etc/passwd", "ftp://127.0.0.1/x", "/etc/passwd"):
        requests = [DownloadRequest(url, "x")]
        outcomes = subject.fetch_all(requests, temp_dir)
        must = "fetch nothing but http and https URLs (check_url tells)"
        check_all_failed(subject, requests, outcomes, temp_dir, error=UnsupportedURL, attempts=1, rule=9, must=must)


# --- rules 10 to 13: cancellation, fetches, name, clock ---------------------------------------------------


def test_closing_early_cancels_and_leaves_no_file(subject: Subject, tree: Path, temp_dir: Path) -> None:
    limit = run_ahead_limit(CONCURRENCY)
    with serve_in_background(tree) as running:
        requests = CountingRequests(read_requests(tree, running.url, MANY_SMALL)[:AHEAD])
        outcomes = subject.fetch(requests, temp_dir, download_concurrency=CONCURRENCY)
        first = next(outcomes)
        outcomes.close()
        left = sorted(temp_dir.iterdir())
        time.sleep(HOLD_SECONDS)
        made = running.stats()["requests_total"]
    assert isinstance(first, DownloadResult), subject.broke(1, f"failed a healthy download ({first})", "fetch it")
    check_verified(subject, [first], temp_dir)
    assert left == [first.path], subject.broke(
        10,
        f"left {[path.name for path in left if path != first.path][:3]} in temp_dir once the iterator was closed",
        "remove, before close() returns, every file it has not handed over (the consumer owns those it took)",
    )
    assert requests.taken <= limit and made <= limit, subject.broke(
        10,
        f"took {requests.taken} of {AHEAD} requests and sent {made} by {HOLD_SECONDS:g} s after the close",
        "stop downloading when the consumer closes the iterator",
    )


def test_closing_a_fetch_stalled_on_its_consumer_leaves_no_file(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    origin = origins()
    requests = [request_for(origin.answer(f"/small/{n}", wire.body(BODY)), BODY) for n in range(STALLED)]
    outcomes = subject.fetch(iter(requests), temp_dir, download_concurrency=CONCURRENCY)
    first = next(outcomes)
    sent = wait_until_still(lambda: len(origin.seen), STILL, timeout=5 * STILL)
    outcomes.close()
    left = sorted(path.name for path in temp_dir.iterdir() if path != Path(first.path))  # type: ignore[union-attr]
    assert isinstance(first, DownloadResult), subject.broke(1, f"failed a healthy download ({first})", "fetch it")
    assert not left, subject.broke(
        10,
        f"left {len(left)} file(s) in temp_dir ({', '.join(left[:3])}) once closed, after it had sent {sent}"
        f" requests and stopped for its consumer",
        "remove, before close() returns, the files of the outcomes it holds, those waiting in its hand-off too",
    )


def test_one_downloader_serves_several_fetches(
    subject: Subject, tree: Path, server: RunningServer, temp_dir: Path
) -> None:
    requests = read_requests(tree, server.url, HUNDRED)[:10]
    downloader = subject.make(download_concurrency=CONCURRENCY)
    with closing(subject.reported(lambda: downloader.fetch(iter(requests[:1]), temp_dir))) as first:
        manifest_like = list(first)
    outcomes = list(subject.reported(lambda: downloader.fetch(iter(requests[1:]), temp_dir)))
    must = "serve one fetch after another (the sync fetches the manifest, then the files, with one downloader)"
    check_all_fetched(subject, requests, manifest_like + outcomes, temp_dir, attempts=1, rule=11, must=must)


def test_is_a_downloader(subject: Subject, temp_dir: Path) -> None:
    downloader = subject.cls(DownloaderSettings())
    assert isinstance(downloader, Downloader), subject.broke(
        12,
        "lacks a `name` or a `fetch(requests, temp_dir)`",
        "implement the Downloader protocol (or subclass BaseDownloader)",
    )
    name = getattr(subject.cls, "name", None)
    assert isinstance(name, str) and name, subject.broke(12, f"has the name {name!r}", "have a non-empty str `name`")
    if ":" not in subject.name:
        assert name == subject.name, subject.broke(
            12, f"calls itself {name!r} but is installed as {subject.name!r}", "be registered under its own `name`"
        )
    outcomes = downloader.fetch(iter([]), temp_dir)
    assert hasattr(outcomes, "close"), subject.broke(
        12, f"returned a {type(outcomes).__name__} from fetch", "return a generator, whose close() cancels the rest"
    )
    assert list(subject.reported(lambda: outcomes)) == [] and not list(temp_dir.iterdir()), subject.broke(
        1, "yielded outcomes or left files for no requests", "yield nothing for nothing"
    )


def test_latency_is_the_time_a_download_holds_its_slot(subject: Subject, tree: Path, temp_dir: Path) -> None:
    with serve_in_background(tree, profile=NetworkProfile(latency=HELD, name="held")) as running:
        requests = read_requests(tree, running.url, MANY_SMALL)[:TURNS]
        started = time.monotonic()
        outcomes = subject.fetch_all(requests, temp_dir, download_concurrency=1)
        elapsed = time.monotonic() - started
    must = "fetch every file of a slow server"
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=13, must=must)
    check_one_clock(subject, results_of(outcomes), HELD, elapsed)


# --- rules 14 to 19: redirects, addresses, credentials, bytes ----------------------------------------------


def test_redirects_are_followed_hop_by_hop_up_to_the_limit(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    """A chain of every redirect status, with absolute, absolute-path and relative Locations."""
    origin = origins()
    origin.answer("/hop/0", wire.body(BODY))
    for hop in range(1, MAX_REDIRECTS + 2):
        location = (f"{origin.url}hop/{hop - 1}", f"/hop/{hop - 1}", str(hop - 1))[hop % 3]
        origin.answer(f"/hop/{hop}", wire.redirect(location, (301, 302, 303, 307, 308)[hop % 5]))
    followed = [request_for(f"{origin.url}hop/{MAX_REDIRECTS}", BODY)]
    outcomes = subject.fetch_all(followed, temp_dir, max_retries=2)
    must = f"follow {MAX_REDIRECTS} redirects (301, 302, 303, 307 and 308, their Location relative or not)"
    check_all_fetched(subject, followed, outcomes, temp_dir, attempts=1, rule=14, must=must)
    for result in results_of(outcomes):
        result.path.unlink()  # the consumer's: the next fetch must leave temp_dir empty
    origin.seen.clear()
    too_many = [DownloadRequest(f"{origin.url}hop/{MAX_REDIRECTS + 1}", "too-many")]
    outcomes = subject.fetch_all(too_many, temp_dir, max_retries=2)
    must = f"give up after {MAX_REDIRECTS} redirects with DownloadError('too many redirects ...'), not retried"
    check_all_failed(subject, too_many, outcomes, temp_dir, error=DownloadError, attempts=1, rule=14, must=must)
    error = outcomes[0].error  # type: ignore[union-attr]
    sent = len(origin.seen)
    assert "too many redirects" in str(error) and sent <= MAX_REDIRECTS + 1, subject.broke(
        14, f"sent {sent} requests for a chain of {MAX_REDIRECTS + 1} redirects and failed with {error!r}", must
    )


def test_a_redirect_to_another_scheme_is_refused(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    origin = origins()
    targets = enumerate(("file:///etc/passwd", "ftp://127.0.0.1/file"))
    requests = [DownloadRequest(origin.answer(f"/to/{n}", wire.redirect(url)), f"to/{n}") for n, url in targets]
    outcomes = subject.fetch_all(requests, temp_dir, max_retries=2)
    must = "follow no redirect to a URL that is not http or https (Redirects checks every hop)"
    check_all_failed(subject, requests, outcomes, temp_dir, error=UnsupportedURL, attempts=1, rule=15, must=must)


def test_the_address_policy_is_checked_at_every_hop(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    """The policy refuses localhost by its name: a downloader that asked DNS would reach this very origin."""
    origin = origins()
    refused = f"http://localhost:{urlsplit(origin.url).port}/refused"
    origin.answer("/refused", wire.body(BODY))
    redirected = origin.answer("/to-refused", wire.redirect(refused))
    requests = [DownloadRequest(refused, "refused"), DownloadRequest(redirected, "to-refused")]
    policy = AddressPolicy(deny=("localhost",))
    outcomes = subject.fetch_all(requests, temp_dir, address_policy=policy, max_retries=2)
    must = "check the first URL and every redirect against settings.address_policy before requesting it (Redirects)"
    check_all_failed(subject, requests, outcomes, temp_dir, error=AddressRefused, attempts=1, rule=16, must=must)
    assert not origin.requests("/refused"), subject.broke(16, f"requested {refused}, whose host is denied", must)


def test_a_redirect_to_another_origin_carries_no_credentials(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    """From origin A to B (another port) and back: neither hop may carry what the settings made private,
    nor the cookie A set on its way out."""
    a, b = origins(), origins()
    a.answer("/start", wire.redirect(b.url + "bounce", headers={"Set-Cookie": "session=from-a; Path=/"}))
    b.answer("/bounce", wire.redirect(a.url + "file"))
    requests = [request_for(a.url + "start", BODY)]
    a.answer("/file", wire.body(BODY))
    outcomes = subject.fetch_all(requests, temp_dir, max_retries=0, **CREDENTIALS)
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=17, must="follow redirects")
    for hop in (*b.requests("/bounce"), *a.requests("/file")):
        leaked = [name for name in PRIVATE if name in hop.headers]
        assert not leaked, subject.broke(
            17,
            f"sent {', '.join(leaked)} with {hop.path} after a redirect from {a.url} to {b.url}",
            "drop Authorization, Cookie and every configured header on a hop to another origin, for that hop and"
            " all later ones, and keep no cookie (Redirects drops them)",
        )


def test_a_content_encoded_body_is_stored_as_sent(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    origin = origins()
    sent = gzip.compress(BODY, mtime=0)
    encoded = wire.body(sent, {"Content-Encoding": "gzip", "Content-Type": "application/gzip"})
    requests = [request_for(origin.answer("/file.gz", encoded), sent)]
    outcomes = subject.fetch_all(requests, temp_dir, max_retries=0)
    must = "store a body as sent, its Content-Encoding not undone: the manifest's digest is of those bytes"
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=18, must=must)
    asked = origin.requests("/file.gz")[0].headers.get("Accept-Encoding")
    must = "ask for the bytes as they are: Accept-Encoding identity (request_headers)"
    assert asked == "identity", subject.broke(18, f"sent Accept-Encoding {asked!r}", must)


def test_a_body_longer_than_max_size_is_refused(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    origin = origins()
    requests = [DownloadRequest(origin.answer("/large", wire.body(BODY * 64)), "large", max_size=MAX_SIZE)]
    outcomes = subject.fetch_all(requests, temp_dir, max_retries=2)
    must = f"refuse a body of unknown size longer than its max_size ({MAX_SIZE} bytes here), not retried (BodyWriter)"
    check_all_failed(subject, requests, outcomes, temp_dir, error=BodyTooLarge, attempts=1, rule=19, must=must)


# --- rules 20 to 23: settings on the wire ------------------------------------------------------------------


def test_configured_headers_and_basic_auth_are_sent(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    origin = origins()
    authorization = wire.basic(str(CREDENTIALS["username"]), str(CREDENTIALS["password"]))
    guarded = wire.challenge("Authorization", authorization, wire.body(BODY))
    requests = [request_for(origin.answer("/file", guarded), BODY)]
    outcomes = subject.fetch_all(requests, temp_dir, max_retries=0, **CREDENTIALS)
    must = "send the configured headers, and the basic auth of username and password"
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=20, must=must)
    configured: dict[str, str] = CREDENTIALS["headers"]  # type: ignore[assignment]
    last = origin.requests("/file")[-1].headers
    wrong = {name: last.get(name) for name, value in configured.items() if last.get(name) != value}
    assert not wrong, subject.broke(20, f"sent {wrong} where the settings' headers are {configured}", must)


def test_downloads_go_through_the_proxy_with_its_credentials(
    subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path
) -> None:
    """The proxy answers for the origin itself, and the origin answers nothing: no request goes anywhere else."""
    origin, proxy = origins(), origins()
    requests = [request_for(origin.url + "file", BODY)]
    expected = wire.basic(PROXY_CREDENTIALS["proxy_username"], PROXY_CREDENTIALS["proxy_password"])
    proxy.answer("/file", wire.challenge("Proxy-Authorization", expected, wire.body(BODY)))
    outcomes = subject.fetch_all(requests, temp_dir, max_retries=0, proxy_url=proxy.url, **PROXY_CREDENTIALS)
    must = "send every request through proxy_url, with the basic auth of proxy_username and proxy_password"
    assert not origin.seen, subject.broke(21, f"requested {requests[0].url} itself, not through {proxy.url}", must)
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=21, must=must)
    target = proxy.requests("/file")[-1].target
    assert target == requests[0].url, subject.broke(21, f"asked the proxy for {target!r}, not the URL", must)


def test_an_untrusted_certificate_is_refused(
    subject: Subject, origins: Callable[..., wire.Origin], certificates: wire.Certificates, temp_dir: Path
) -> None:
    origin = origins(wire.server_context(certificates))
    requests = [request_for(origin.answer("/file", wire.body(BODY)), BODY)]
    outcomes = subject.fetch_all(requests, temp_dir, max_retries=2)
    must = "refuse a server whose certificate it does not trust (tls_validation is on by default), not retried"
    check_all_failed(subject, requests, outcomes, temp_dir, error=TLSVerificationError, attempts=1, rule=22, must=must)


@pytest.mark.parametrize("given", ["file", "pem"])
def test_ca_cert_is_trusted(
    subject: Subject, origins: Callable[..., wire.Origin], certificates: wire.Certificates, temp_dir: Path, given: str
) -> None:
    origin = origins(wire.server_context(certificates))
    requests = [request_for(origin.answer("/file", wire.body(BODY)), BODY)]
    ca_cert = _given(certificates.server_cert, given)
    outcomes = subject.fetch_all(requests, temp_dir, max_retries=0, ca_cert=ca_cert)
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=22, must=TRUSTS_FILES_AND_PEM)


@pytest.mark.filterwarnings("ignore:Unverified HTTPS request")
def test_tls_validation_off_accepts_any_certificate(
    subject: Subject, origins: Callable[..., wire.Origin], certificates: wire.Certificates, temp_dir: Path
) -> None:
    origin = origins(wire.server_context(certificates))
    requests = [request_for(origin.answer("/file", wire.body(BODY)), BODY)]
    outcomes = subject.fetch_all(requests, temp_dir, max_retries=0, tls_validation=False)
    must = "accept any certificate when tls_validation is off"
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=22, must=must)


@pytest.mark.parametrize("given", ["file", "pem"])
def test_the_client_certificate_is_shown(
    subject: Subject, origins: Callable[..., wire.Origin], certificates: wire.Certificates, temp_dir: Path, given: str
) -> None:
    """The server refuses any client without this certificate: fetching the file shows it was given."""
    origin = origins(wire.server_context(certificates, require_client=True))
    requests = [request_for(origin.answer("/file", wire.body(BODY)), BODY)]
    tls = {
        "ca_cert": _given(certificates.server_cert, given),
        "client_cert": _given(certificates.client_cert, given),
        "client_key": _given(certificates.client_key, given),
    }
    outcomes = subject.fetch_all(requests, temp_dir, max_retries=0, **tls)
    must = "show client_cert with client_key to a server that asks for them, each a file or PEM text"
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=22, must=must)


@pytest.mark.parametrize("setting", ["ca_cert", "client_cert"])
def test_a_certificate_that_cannot_be_loaded_is_refused_when_made(subject: Subject, setting: str) -> None:
    try:
        subject.cls(DownloaderSettings(**{setting: NOT_A_CERTIFICATE}))  # type: ignore[arg-type]
    except ValueError:
        return
    raise AssertionError(
        subject.broke(
            22,
            f"was made with a {setting} that holds no certificate",
            "refuse certificates it cannot load from __init__, with a ValueError (build_ssl_context raises one)",
        )
    )


def test_rate_limit_spaces_the_starts(subject: Subject, origins: Callable[..., wire.Origin], temp_dir: Path) -> None:
    origin = origins()
    requests = [request_for(origin.answer(f"/rated/{n}", wire.body(BODY)), BODY) for n in range(RATED)]
    outcomes = subject.fetch_all(requests, temp_dir, rate_limit=RATE, download_concurrency=RATED)
    must = f"start at most rate_limit requests a second (RateLimiter): these {RATED} over {(RATED - 1) / RATE:g} s"
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=23, must=must)
    starts = sorted(seen.at for seen in origin.seen)
    span = starts[-1] - starts[0]
    assert span >= RATE_SLACK * (RATED - 1) / RATE, subject.broke(
        23, f"started {RATED} requests within {span:.2f} s at rate_limit={RATE:g}", must
    )


# --- rule 24: a changing limit, where declared ---------------------------------------------------------------


def _adapting(subject: Subject) -> None:
    """Skip the test of a downloader that does not say it follows a changing limit (it keeps a fixed one)."""
    if not adapts(subject.cls):
        pytest.skip(f"downloader {subject.name!r} keeps a fixed limit (no adapts_concurrency = True)")


def test_a_changing_limit_stays_within_max_concurrency(subject: Subject, tree: Path, temp_dir: Path) -> None:
    _adapting(subject)
    downloader = subject.make(auto_concurrency=True, max_concurrency=MOST)
    with serve_in_background(tree, profile=PROFILES["wan"]) as running:
        requests = read_requests(tree, running.url, HUNDRED)
        outcomes = list(subject.reported(lambda: downloader.fetch(iter(requests), temp_dir)))
        seen = running.stats()
    must = f"keep at most max_concurrency ({MOST}) downloads in flight, and connections open, with auto_concurrency"
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule=24, must=must)
    held = max(seen["max_in_flight"], seen["max_connections"])
    assert held <= MOST, subject.broke(24, f"held {held} requests or connections at once", must)
    limit = getattr(downloader, "concurrency", None)
    assert isinstance(limit, ConcurrencyLimit), subject.broke(
        24, f"has no ConcurrencyLimit as its `concurrency` after a fetch (it has {limit!r})",
        "keep the fetch's limit (downloaders.limit_for) as `concurrency`, where the sync reads its record")
    limits = [change.limit for change in limit.trajectory()]
    assert all(1 <= value <= MOST for value in limits), subject.broke(24, f"recorded limits {limits}", must)


@pytest.mark.parametrize("status", [503, 429])
def test_a_changing_limit_backs_off_a_connection_limited_remote(
    subject: Subject, tree: Path, temp_dir: Path, status: int
) -> None:
    _adapting(subject)
    limit = ConnectionLimit(ALLOWED, status=status, retry_after=0)
    with serve_in_background(tree, profile=PROFILES["wan"], limit=limit) as running:
        requests = read_requests(tree, running.url, HUNDRED)[:40]
        outcomes = subject.fetch_all(requests, temp_dir, auto_concurrency=True, max_concurrency=MOST)
        refused = running.stats()["limited"]
    must = (f"follow its limit down when the remote refuses requests beyond {ALLOWED} at once ({status}), "
            "and fetch every file")
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=None, rule=24, must=must)
    assert refused < len(requests), subject.broke(
        24, f"was refused {refused} times fetching {len(requests)} files", must)


def _given(path: Path, given: str) -> Path | str:
    """A certificate or key as a file's path, or as the PEM text itself."""
    return path if given == "file" else path.read_text()
