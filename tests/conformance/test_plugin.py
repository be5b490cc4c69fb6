"""The conformance suite as a plugin author meets it: found by pytest, failing broken downloaders clearly.

Each test runs pytest in a child process, as `pytest --pulp-sync-downloader NAME` or
`python -m conformance NAME` would be run, selecting the few contract tests it is about. The broken
downloaders of the later rules (tests/conformance/broken.py) share one child, each running the one
contract test it breaks.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from conformance import CONTRACT
from conformance.rules import RULES
from tests.conformance.running import REPO, SuiteRun, run_suite

pytestmark = pytest.mark.slow

DIGEST_MESSAGE = (
    "rule 2 (Verified files only): downloader 'ignores-digest' returned a result whose bytes do not match"
    " the requested sha256: it must verify digests"
)
BROKEN: dict[str, tuple[int, str]] = {
    "BacksOffInItsSlot": (5, "test_a_download_backing_off_holds_no_slot"),
    "IgnoresBackoffMax": (7, "test_backoff_max_caps_the_wait_for_retry_after"),
    "IgnoresConnectTimeouts": (8, "test_a_connect_that_never_completes_times_out[-connect_timeout]"),
    "IgnoresTotalTimeout": (8, "test_total_timeout_ends_a_trickling_body"),
    "RaisesFailures": (9, "test_only_http_and_https"),
    "ForgetsWhatItWaitsToHandOver": (10, "test_closing_a_fetch_stalled_on_its_consumer_leaves_no_file"),
    "StopsAfterFiveRedirects": (14, "test_redirects_are_followed_hop_by_hop_up_to_the_limit"),
    "LetsAiohttpRedirect": (15, "test_a_redirect_to_another_scheme_is_refused"),
    "IgnoresAddressPolicy": (16, "test_the_address_policy_is_checked_at_every_hop"),
    "KeepsHeadersAcrossOrigins": (17, "test_a_redirect_to_another_origin_carries_no_credentials"),
    "DecodesContent": (18, "test_a_content_encoded_body_is_stored_as_sent"),
    "IgnoresMaxSize": (19, "test_a_body_longer_than_max_size_is_refused"),
    "SendsNoCredentials": (20, "test_configured_headers_and_basic_auth_are_sent"),
    "IgnoresProxy": (21, "test_downloads_go_through_the_proxy_with_its_credentials"),
    "NeverValidatesTLS": (22, "test_an_untrusted_certificate_is_refused"),
    "IgnoresCaCert": (22, "test_ca_cert_is_trusted[-pem]"),
    "AlwaysValidatesTLS": (22, "test_tls_validation_off_accepts_any_certificate"),
    "IgnoresClientCert": (22, "test_the_client_certificate_is_shown[-file]"),
    "LoadsCertificatesLate": (22, "test_a_certificate_that_cannot_be_loaded_is_refused_when_made[-ca_cert]"),
    "IgnoresRateLimit": (23, "test_rate_limit_spaces_the_starts"),
    "IgnoresItsChangingLimit": (24, "test_a_changing_limit_backs_off_a_connection_limited_remote[-503]"),
}
"""Each broken downloader of the later rules: the rule it breaks, and the contract test that must say so
(`[-param]`: the test's other parameters, after the downloader's name)."""


def _register(site: Path, name: str, target: str) -> Path:
    """An installed distribution that registers `target` as downloader `name`, as pip would leave it."""
    dist_info = site / "broken_downloaders-0.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-downloaders\nVersion: 0.0\n")
    (dist_info / "entry_points.txt").write_text(f"[pulp_sync.downloaders]\n{name} = {target}\n")
    return site


def test_every_installed_downloader_by_default_and_a_digest_ignored_is_named(tmp_path: Path) -> None:
    site = _register(tmp_path / "site", "ignores-digest", "tests.conformance.broken:IgnoresDigest")
    suite = ["-m", "pytest", "--pyargs", "conformance.test_contract"]
    listed = run_suite([*suite, "--collect-only", "-q", "-k", "is_a_downloader"], tmp_path, pythonpath=[site, REPO])
    for name in ("asyncio", "futures", "ignores-digest"):
        assert f"test_is_a_downloader[{name}]" in listed.output, listed.tail()
    selection = "ignores-digest and (corrupt or every_file)"
    run = run_suite([*suite, "-k", selection], tmp_path, pythonpath=[site, REPO])
    assert run.returncode == 1, run.tail()
    assert DIGEST_MESSAGE in run.output, run.tail()
    assert run.counts["failed"] == 2 and run.counts["passed"] == 1, run.tail()


def test_a_downloader_that_runs_ahead_of_its_consumer_fails(tmp_path: Path) -> None:
    name = "tests.conformance.broken:Hoards"
    run = run_suite(["-m", "conformance", name, "-k", "slow_consumer or as_they_complete"], tmp_path, pythonpath=[REPO])
    assert run.returncode == 1 and run.counts["failed"] == 2, run.tail()
    assert f"rule 6 (Bounded hand-off): downloader '{name}' took 500 of 500 requests from the iterable" in run.output
    assert f"rule 4 (Completion order, streamed): downloader '{name}' yielded its first outcome only once" in run.output
    assert "it must yield each outcome as soon as it completes" in run.output, run.tail()


def test_the_option_adds_the_suite_to_a_plain_pytest_run(tmp_path: Path) -> None:
    project = tmp_path / "a-plugin-project"
    project.mkdir()
    run = run_suite(
        ["-m", "pytest", "--pulp-sync-downloader", "futures", "-k", "is_a_downloader", "-v"], tmp_path, cwd=project
    )
    assert run.returncode == 0 and run.counts["passed"] == 1, run.tail()
    assert "::test_is_a_downloader[futures] PASSED" in run.output, run.tail()


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_h_prints_the_usage(tmp_path: Path, flag: str) -> None:
    done = subprocess.run([sys.executable, "-m", "conformance", flag], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith("usage: python -m conformance NAME [pytest arguments]")


def test_an_unknown_downloader_is_a_usage_error(tmp_path: Path) -> None:
    run = run_suite(["-m", "conformance", "no-such-downloader"], tmp_path)
    assert run.returncode == 4, run.tail()
    assert "no downloader named 'no-such-downloader'; installed: asyncio, futures" in run.output, run.tail()


def test_a_downloader_that_clocks_the_wait_for_its_slot_fails(tmp_path: Path) -> None:
    name = "tests.conformance.broken:ClocksTheWait"
    run = run_suite(["-m", "conformance", name, "-k", "latency"], tmp_path, pythonpath=[REPO])
    assert run.returncode == 1 and run.counts["failed"] == 1, run.tail()
    assert f"rule 13 (One clock): downloader '{name}' reported latencies adding up to" in run.output, run.tail()
    assert "it must measure latency from the moment a download holds its concurrency slot" in run.output, run.tail()


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[SuiteRun, dict[str, str]]:
    """One child pytest running, for each downloader of BROKEN, the one contract test it breaks; its
    verdict, and the failure message of each test that failed, by the test's name."""
    tmp_path = tmp_path_factory.mktemp("broken")
    report = tmp_path / "report.xml"
    names = [f"tests.conformance.broken:{broken}" for broken in BROKEN]
    options = [argument for name in names for argument in ("--pulp-sync-downloader", name)]
    tests = [f"{CONTRACT}::{_test_id(broken)}" for broken in BROKEN]
    run = run_suite(["-m", "pytest", *options, *tests, f"--junitxml={report}", "-q"], tmp_path, pythonpath=[REPO])
    cases = ElementTree.parse(report).getroot().iter("testcase") if report.exists() else iter(())
    failures = {case.get("name", ""): failure.get("message", "") for case in cases for failure in case.iter("failure")}
    return run, failures


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_each_broken_downloader_fails_the_rule_it_breaks(
    broken: str, broken_run: tuple[SuiteRun, dict[str, str]]
) -> None:
    run, failures = broken_run
    rule, _ = BROKEN[broken]
    message = failures.get(_test_id(broken), "")
    named = f"rule {rule} ({RULES[rule]}): downloader 'tests.conformance.broken:{broken}' "
    assert named in message and " it must " in message, f"{broken}: {message or run.tail()}"


def test_no_broken_downloader_passes_its_test(broken_run: tuple[SuiteRun, dict[str, str]]) -> None:
    run, failures = broken_run
    assert run.returncode == 1 and run.counts == {"failed": len(BROKEN)}, run.tail()


def _test_id(broken: str) -> str:
    """The node name of the contract test `broken` breaks, with the downloader's name as its parameter."""
    test, _, rest = BROKEN[broken][1].partition("[")
    return f"{test}[tests.conformance.broken:{broken}{rest.rstrip(']')}]"
