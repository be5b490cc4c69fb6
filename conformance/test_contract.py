"""The downloader contract as tests: `pytest --pulp-sync-downloader NAME`, or `python -m conformance NAME`.

Each test gets `subject`, the downloader under test, and a fixture server on 127.0.0.1 serving a
small generated file-example tree, healthy or with the network profile and faults the test needs.
The rules are those of docs/plugins.md; each failure message names the one that broke.
"""

from __future__ import annotations

import time
from contextlib import closing
from pathlib import Path
from typing import Iterator

import pytest

from conformance.checks import (
    RUN_AHEAD_FACTOR,
    CountingRequests,
    Subject,
    check_all_failed,
    check_all_fetched,
    check_no_partial_files,
    check_one_clock,
    check_one_outcome_per_request,
    check_verified,
    read_requests,
    results_of,
    run_ahead_limit,
    wait_for_stats,
)
from conformance.plugin import downloader_names, resolve
from downloaders import (
    DigestMismatch,
    DownloadConnectionError,
    Downloader,
    DownloaderSettings,
    DownloadError,
    DownloadFailure,
    DownloadRequest,
    DownloadResult,
    DownloadTimeout,
    HttpStatusError,
    SizeMismatch,
    UnsupportedURL,
)
from fixtures.faults import FaultConfig
from fixtures.generate import generate_tree
from fixtures.profiles import PROFILES, NetworkProfile
from fixtures.server import RunningServer, serve_in_background

TREE_SCALE = 0.005
"""About 2 MB per 100 files of the PULP_MANIFEST_N sets, and 10,000 small files."""
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
TRICKLE_BPS = 4096
"""Bytes a second per connection of the trickle test's server: a chunk (4 KiB) each second, so no read
waits long, yet each file takes seconds."""
ALLOWANCE = 1.0
"""deadline_allowance of the trickle test."""
DERIVED_DEADLINE = 2.0
"""The trickle test's deadline: ALLOWANCE, plus the file's size at a min_rate chosen to make this."""
DEADLINE_SLACK = 1.5
"""Seconds past the deadline a downloader may take to give up: a read of the trickle returns each second."""
HELD = 0.1
"""Seconds the server of the clock test holds every response before its first byte."""
TURNS = 6
"""Small files the clock test fetches one at a time: a clock that counts the turns before a download's own
reads up to TURNS x HELD."""

TRANSIENT = {
    "5xx": (FaultConfig(http_5xx=1.0, max_per_path=1), {}),
    "reset": (FaultConfig(reset=1.0, max_per_path=1), {}),
    "truncate": (FaultConfig(truncate=1.0, max_per_path=1), {}),
    "corrupt": (FaultConfig(corrupt=1.0, max_per_path=1), {}),
    "stall": (FaultConfig(stall=1.0, max_per_path=1, stall_seconds=30), {"sock_read_timeout": 1.0}),
}
READ_TIMEOUTS: dict[str, tuple[dict[str, object], int, str]] = {
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


def test_is_a_downloader(subject: Subject, temp_dir: Path) -> None:
    downloader = subject.cls(DownloaderSettings())
    assert isinstance(downloader, Downloader), subject.broke(
        "lacks a `name` or a `fetch(requests, temp_dir)`",
        "implement the Downloader protocol (or subclass BaseDownloader)",
    )
    name = getattr(subject.cls, "name", None)
    assert isinstance(name, str) and name, subject.broke(f"has the name {name!r}", "have a non-empty str `name`")
    if ":" not in subject.name:
        assert name == subject.name, subject.broke(
            f"calls itself {name!r} but is installed as {subject.name!r}", "be registered under its own `name`"
        )
    outcomes = downloader.fetch(iter([]), temp_dir)
    assert hasattr(outcomes, "close"), subject.broke(
        f"returned a {type(outcomes).__name__} from fetch", "return a generator, whose close() cancels the rest"
    )
    assert list(outcomes) == [] and not list(temp_dir.iterdir()), subject.broke(
        "yielded outcomes or left files for no requests", "yield nothing for nothing"
    )


def test_fetches_every_file_verified(subject: Subject, tree: Path, server: RunningServer, temp_dir: Path) -> None:
    requests = read_requests(tree, server.url, "PULP_MANIFEST_100")
    outcomes = list(subject.fetch(requests, temp_dir))
    check_all_fetched(
        subject, requests, outcomes, temp_dir, attempts=1, rule="fetch any iterable of requests from a healthy server"
    )


def test_many_small_files(subject: Subject, tree: Path, server: RunningServer, temp_dir: Path) -> None:
    requests = read_requests(tree, server.url, "many-small/PULP_MANIFEST")[:MANY]
    outcomes = subject.fetch_all(requests, temp_dir, download_concurrency=20)
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule="fetch thousands of small files")


def test_one_downloader_serves_several_fetches(
    subject: Subject, tree: Path, server: RunningServer, temp_dir: Path
) -> None:
    requests = read_requests(tree, server.url, "PULP_MANIFEST_100")[:10]
    downloader = subject.cls(DownloaderSettings(download_concurrency=CONCURRENCY))
    with closing(downloader.fetch(iter(requests[:1]), temp_dir)) as first:
        manifest_like = list(first)
    outcomes = list(downloader.fetch(iter(requests[1:]), temp_dir))
    check_all_fetched(
        subject,
        requests,
        manifest_like + outcomes,
        temp_dir,
        attempts=1,
        rule="serve one fetch after another (the sync fetches the manifest, then the files, with one downloader)",
    )


def test_concurrency_is_bounded_as_the_server_sees_it(subject: Subject, tree: Path, temp_dir: Path) -> None:
    with serve_in_background(tree, profile=PROFILES["wan"]) as running:
        requests = read_requests(tree, running.url, "PULP_MANIFEST_100")[:40]
        outcomes = subject.fetch_all(requests, temp_dir, download_concurrency=CONCURRENCY)
        seen = running.stats()["max_in_flight"]
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule="fetch every file of a slow server")
    assert seen <= CONCURRENCY, subject.broke(
        f"had {seen} requests in flight at once at download_concurrency={CONCURRENCY}, as the server saw them",
        "keep at most download_concurrency requests in flight",
    )
    assert seen >= 2, subject.broke(
        f"never had two requests in flight at download_concurrency={CONCURRENCY} (40 files, 40 ms to first byte)",
        "download concurrently, up to download_concurrency at once",
    )


def test_not_found_fails_at_once_with_the_url(subject: Subject, server: RunningServer, temp_dir: Path) -> None:
    requests = [DownloadRequest(server.url + "files/no-such-file.bin", "files/no-such-file.bin")]
    outcomes = subject.fetch_all(requests, temp_dir)
    check_all_failed(subject, requests, outcomes, temp_dir, error=HttpStatusError, attempts=1, rule="never retry a 404")
    status = outcomes[0].error.status  # type: ignore[union-attr]
    assert status == 404, subject.broke(f"reported status {status} for a 404", "carry the server's status")


def test_only_http_and_https(subject: Subject, temp_dir: Path) -> None:
    for url in ("file:///etc/passwd", "ftp://127.0.0.1/x", "/etc/passwd"):
        requests = [DownloadRequest(url, "x")]
        outcomes = subject.fetch_all(requests, temp_dir)
        check_all_failed(
            subject,
            requests,
            outcomes,
            temp_dir,
            error=UnsupportedURL,
            attempts=1,
            rule="fetch nothing but http and https URLs (check_url tells)",
        )


@pytest.mark.parametrize("fault", sorted(TRANSIENT))
def test_transient_fault_then_success(subject: Subject, tree: Path, temp_dir: Path, fault: str) -> None:
    faults, settings = TRANSIENT[fault]
    with serve_in_background(tree, faults=faults) as running:
        requests = read_requests(tree, running.url)[:10]
        outcomes = subject.fetch_all(requests, temp_dir, download_concurrency=CONCURRENCY, **settings)
    check_all_fetched(
        subject, requests, outcomes, temp_dir, attempts=2, rule=f"retry after a {fault} (RetryPolicy decides)"
    )


def test_429_waits_for_retry_after(subject: Subject, tree: Path, temp_dir: Path) -> None:
    with serve_in_background(
        tree, faults=FaultConfig(http_429=1.0, max_per_path=1, retry_after=RETRY_AFTER)
    ) as running:
        requests = read_requests(tree, running.url)[:3]
        started = time.monotonic()
        outcomes = subject.fetch_all(requests, temp_dir)
        elapsed = time.monotonic() - started
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=2, rule="retry after a 429")
    assert elapsed >= 0.95 * RETRY_AFTER, subject.broke(
        f"retried 429s with 'Retry-After: {RETRY_AFTER}' and was done after {elapsed:.2f} s",
        "wait as long as Retry-After asks before the next attempt (RetryPolicy.delay does)",
    )


@pytest.mark.parametrize("fault", sorted(PERSISTENT))
def test_persistent_fault_fails_after_the_retries_it_allows(
    subject: Subject, tree: Path, temp_dir: Path, fault: str
) -> None:
    faults, error, max_retries, attempts = PERSISTENT[fault]
    with serve_in_background(tree, faults=faults) as running:
        requests = read_requests(tree, running.url)[:3]
        outcomes = subject.fetch_all(requests, temp_dir, max_retries=max_retries)
    rule = "make 1 + max_retries attempts, or 2 after a size or digest mismatch, then give up (RetryPolicy decides)"
    check_all_failed(subject, requests, outcomes, temp_dir, error=error, attempts=attempts, rule=rule)


@pytest.mark.parametrize("offset", [-1, 1], ids=["body-longer", "body-shorter"])
def test_size_mismatch_is_typed(
    subject: Subject, tree: Path, server: RunningServer, temp_dir: Path, offset: int
) -> None:
    request = read_requests(tree, server.url)[0]
    assert request.size is not None
    requests = [DownloadRequest(request.url, request.relative_path, request.sha256, request.size + offset)]
    outcomes = subject.fetch_all(requests, temp_dir)
    check_all_failed(
        subject, requests, outcomes, temp_dir, error=SizeMismatch, attempts=2, rule="retry a size mismatch once"
    )
    expected = outcomes[0].error.expected  # type: ignore[union-attr]
    assert expected == request.size + offset, subject.broke(
        f"reported an expected size of {expected} where the request says {request.size + offset}",
        "report the request's size as SizeMismatch.expected",
    )


def test_a_trickling_body_ends_at_the_derived_deadline(subject: Subject, tree: Path, temp_dir: Path) -> None:
    bound = DERIVED_DEADLINE + DEADLINE_SLACK
    with serve_in_background(tree, profile=NetworkProfile(per_connection_bps=TRICKLE_BPS, name="trickle")) as running:
        request = max(read_requests(tree, running.url), key=lambda request: request.size or 0)
        assert request.size and request.size / TRICKLE_BPS > bound, "the body must trickle for longer than the bound"
        min_rate = request.size / (DERIVED_DEADLINE - ALLOWANCE)
        started = time.monotonic()
        outcomes = subject.fetch_all(
            [request], temp_dir, total_timeout=None, min_rate=min_rate, deadline_allowance=ALLOWANCE, max_retries=0
        )
        elapsed = time.monotonic() - started
    rule = (
        "end each attempt by deadline_seconds(request, settings), which without total_timeout is"
        " deadline_allowance + size / min_rate"
    )
    assert elapsed < bound, subject.broke(
        f"held a body trickling at {TRICKLE_BPS:,} B/s for {elapsed:.1f} s, with no total_timeout and a deadline"
        f" of {DERIVED_DEADLINE:g} s ({ALLOWANCE:g} s + {request.size:,} bytes at {min_rate:,.0f} B/s)",
        rule,
    )
    check_all_failed(subject, [request], outcomes, temp_dir, error=DownloadTimeout, attempts=1, rule=rule)


def test_latency_is_the_time_a_download_holds_its_slot(subject: Subject, tree: Path, temp_dir: Path) -> None:
    with serve_in_background(tree, profile=NetworkProfile(latency=HELD, name="held")) as running:
        requests = read_requests(tree, running.url, "many-small/PULP_MANIFEST")[:TURNS]
        started = time.monotonic()
        outcomes = subject.fetch_all(requests, temp_dir, download_concurrency=1)
        elapsed = time.monotonic() - started
    check_all_fetched(subject, requests, outcomes, temp_dir, attempts=1, rule="fetch every file of a slow server")
    check_one_clock(subject, results_of(outcomes), HELD, elapsed)


@pytest.mark.parametrize("case", sorted(READ_TIMEOUTS))
def test_read_timeout(subject: Subject, tree: Path, temp_dir: Path, case: str) -> None:
    server, max_retries, rule = READ_TIMEOUTS[case]
    with serve_in_background(tree, **server) as running:
        requests = read_requests(tree, running.url)[:2]
        outcomes = subject.fetch_all(requests, temp_dir, sock_read_timeout=0.5, max_retries=max_retries)
    check_all_failed(subject, requests, outcomes, temp_dir, error=DownloadTimeout, attempts=1 + max_retries, rule=rule)


def test_outcomes_are_handed_over_as_they_complete(subject: Subject, tree: Path, temp_dir: Path) -> None:
    faults = FaultConfig(stall=0.25, stall_seconds=30)
    with serve_in_background(tree, faults=faults) as running:
        manifest = read_requests(tree, running.url, "PULP_MANIFEST_100")
        stalled = [request for request in manifest if faults.pick(request.relative_path, 0)]
        quick = [request for request in manifest if not faults.pick(request.relative_path, 0)]
        requests = stalled[:1] + quick[:9]  # which requests stall depends on (seed, path) alone
        settings = {"download_concurrency": CONCURRENCY, "sock_read_timeout": 3.0, "max_retries": 0}
        with closing(subject.fetch(iter(requests), temp_dir, **settings)) as outcomes:
            first = next(outcomes)
            stats = wait_for_stats(running, lambda seen: seen["faults"]["stall"] >= 1)  # type: ignore[index]
            rest = list(outcomes)
    check_one_outcome_per_request(subject, requests, [first, *rest])
    assert first.request != requests[0], subject.broke(
        "yielded first the outcome of a request still stalled while others had completed",
        "yield outcomes in completion order, not in request order",
    )
    assert stats["in_flight"], subject.broke(  # type: ignore[index]
        "yielded its first outcome only once every request had ended",
        "yield each outcome as soon as it completes",
    )
    assert rest[-1].request == requests[0] and isinstance(rest[-1], DownloadFailure), subject.broke(
        "did not end with the stalled request's DownloadTimeout", "yield outcomes in completion order"
    )
    check_verified(subject, results_of([first, *rest]), temp_dir)
    check_no_partial_files(subject, temp_dir, [first, *rest], "after a stalled body")


def test_a_slow_consumer_holds_the_downloader_back(subject: Subject, tree: Path, temp_dir: Path) -> None:
    limit = run_ahead_limit(CONCURRENCY)
    with serve_in_background(tree) as running:
        requests = CountingRequests(read_requests(tree, running.url, "many-small/PULP_MANIFEST")[:AHEAD])
        with closing(subject.fetch(requests, temp_dir, download_concurrency=CONCURRENCY)) as outcomes:
            first = next(outcomes)
            time.sleep(HOLD_SECONDS)
            taken, made, files = requests.taken, running.stats()["requests_total"], len(list(temp_dir.iterdir()))
            rest = list(outcomes)
    ahead = f"while its consumer held the first outcome for {HOLD_SECONDS:g} s"
    rule = f"hand outcomes over through a bounded queue: at most {limit} ({RUN_AHEAD_FACTOR} x download_concurrency)"
    assert taken <= limit, subject.broke(f"took {taken} of {AHEAD} requests from the iterable {ahead}", rule)
    assert made <= limit, subject.broke(f"sent {made} requests {ahead}", rule)
    assert files <= limit, subject.broke(f"had {files} files in temp_dir {ahead}", rule)
    check_all_fetched(
        subject, requests.requests, [first, *rest], temp_dir, attempts=1, rule="go on once the consumer does"
    )


def test_closing_early_cancels_and_leaves_no_file(subject: Subject, tree: Path, temp_dir: Path) -> None:
    limit = run_ahead_limit(CONCURRENCY)
    with serve_in_background(tree) as running:
        requests = CountingRequests(read_requests(tree, running.url, "many-small/PULP_MANIFEST")[:AHEAD])
        outcomes = subject.fetch(requests, temp_dir, download_concurrency=CONCURRENCY)
        first = next(outcomes)
        outcomes.close()
        left = sorted(temp_dir.iterdir())
        time.sleep(HOLD_SECONDS)
        made = running.stats()["requests_total"]
    assert isinstance(first, DownloadResult), subject.broke(f"failed a healthy download ({first})", "fetch it")
    check_verified(subject, [first], temp_dir)
    assert left == [first.path], subject.broke(
        f"left {[path.name for path in left if path != first.path][:3]} in temp_dir once the iterator was closed",
        "remove, before close() returns, every file it has not handed over (the consumer owns those it took)",
    )
    assert requests.taken <= limit and made <= limit, subject.broke(
        f"took {requests.taken} of {AHEAD} requests and sent {made} by {HOLD_SECONDS:g} s after the close",
        "stop downloading when the consumer closes the iterator",
    )
