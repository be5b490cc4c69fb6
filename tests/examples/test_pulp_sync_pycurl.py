"""The pycurl plugin's settings as libcurl options (examples/pulp-sync-pycurl); its behaviour is
the conformance suite's and tests/pulp_sync/test_hostile_input.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pycurl
import pytest
from pulp_sync_pycurl import downloader
from pulp_sync_pycurl.downloader import curl_options

from downloaders import DownloaderSettings, DownloadRequest, first_hop_headers
from tests.downloaders.test_bounds import fetch_all, three_files  # noqa: F401 - a fixture, used by name


def test_the_defaults_verify_tls_ignore_proxy_variables_and_send_our_headers() -> None:
    options = curl_options(DownloaderSettings())
    headers = first_hop_headers(DownloaderSettings(), "pycurl")
    assert (options[pycurl.SSL_VERIFYPEER], options[pycurl.SSL_VERIFYHOST]) == (1, 2)
    assert options[pycurl.PROXY] == ""
    assert options[pycurl.CONNECTTIMEOUT_MS] == 30_000  # the shorter of connect (60 s) and sock_connect (30 s)
    assert (options[pycurl.LOW_SPEED_LIMIT], options[pycurl.LOW_SPEED_TIME]) == (1, 60)
    assert pycurl.TIMEOUT_MS not in options and "Authorization" not in headers
    assert headers["Accept-Encoding"] == "identity" and headers["User-Agent"] == "pulp-sync (pycurl)"
    assert options[pycurl.PROTOCOLS] == pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS
    assert options[pycurl.FOLLOWLOCATION] == 0  # Redirects follows them, hop by hop


def test_every_setting_reaches_libcurl(tmp_path: Path) -> None:
    settings = DownloaderSettings(
        sock_read_timeout=0.5,
        total_timeout=2.5,
        connect_timeout=0.25,
        sock_connect_timeout=None,
        username="user",
        password="secret",
        proxy_url="http://127.0.0.1:3128",
        proxy_username="proxy-user",
        proxy_password="proxy-secret",
        tls_validation=False,
        ca_cert=tmp_path / "ca.pem",
        client_cert=tmp_path / "client.pem",
        client_key=tmp_path / "client.key",
        headers={"X-Mirror": "a"},
        chunk_size=64 * 1024 * 1024,
    )
    options = curl_options(settings)
    headers = first_hop_headers(settings, "pycurl")
    assert options[pycurl.LOW_SPEED_TIME] == 1  # libcurl counts whole seconds, at least one
    assert options[pycurl.CONNECTTIMEOUT_MS] == 250
    assert pycurl.TIMEOUT_MS not in options  # the attempt's deadline depends on the request: set per transfer
    assert headers["Authorization"] == "Basic dXNlcjpzZWNyZXQ=" and pycurl.USERPWD not in options
    assert (options[pycurl.PROXY], options[pycurl.PROXYUSERPWD]) == ("http://127.0.0.1:3128", "proxy-user:proxy-secret")
    assert (options[pycurl.SSL_VERIFYPEER], options[pycurl.SSL_VERIFYHOST]) == (0, 0)
    assert options[pycurl.CAINFO] == str(tmp_path / "ca.pem")
    assert options[pycurl.SSLCERT] == str(tmp_path / "client.pem")
    assert options[pycurl.SSLKEY] == str(tmp_path / "client.key")
    assert headers["X-Mirror"] == "a"
    assert options[pycurl.BUFFERSIZE] == downloader.MAX_BUFFER


def test_an_easy_handle_is_made_only_for_a_transfer_that_starts(
    three_files: list[DownloadRequest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3 files at a concurrency of 200 make 3 handles, not 200 up front."""
    made: list[pycurl.Curl] = []
    curl = pycurl.Curl

    def counted(*args: Any) -> pycurl.Curl:
        made.append(curl(*args))
        return made[-1]

    monkeypatch.setattr(pycurl, "Curl", counted)
    fetch_all(downloader.CurlDownloader, three_files, tmp_path)
    assert 1 <= len(made) <= 3
