"""`ca_cert`, `client_cert` and `client_key` as PEM text (as Pulp keeps them) as well as files, in both engines.

Servers on 127.0.0.1 behind self-signed certificates made with the openssl command line in a temp dir.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import downloaders
from downloaders import (
    DownloadConnectionError,
    DownloaderSettings,
    DownloadResult,
    HttpStatusError,
    TLSConfigurationError,
    TLSVerificationError,
    build_ssl_context,
    is_pem,
    tls,
)
from downloaders.headers import basic_credentials
from downloaders.settings import REMOTE_SETTINGS
from tests.downloaders.conftest import failure_of, fetch_one
from tests.servers import self_signed_certificate, serve_app, serve_raw

BODY = b"over TLS\n"


@dataclass(frozen=True)
class Pair:
    """A certificate and its key: files, and their text."""

    cert: Path
    key: Path

    @property
    def cert_text(self) -> str:
        return self.cert.read_text()

    @property
    def key_text(self) -> str:
        return self.key.read_text()


@dataclass(frozen=True)
class Servers:
    server: Pair
    client: Pair
    url: str
    """Trusts any client."""
    mutual_url: str
    """Requires a client certificate: `client`'s."""


def make_pair(folder: Path) -> Pair:
    folder.mkdir()
    return Pair(*self_signed_certificate(folder))


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    folder = tmp_path_factory.mktemp("tls")
    server, client = make_pair(folder / "server"), make_pair(folder / "client")

    plain = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    plain.load_cert_chain(server.cert, server.key)
    mutual = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    mutual.load_cert_chain(server.cert, server.key)
    mutual.verify_mode = ssl.CERT_REQUIRED
    mutual.load_verify_locations(client.cert)
    with serve_app(file_app(), plain) as url, serve_app(file_app(), mutual) as mutual_url:
        yield Servers(server, client, url + "file", mutual_url + "file")


def file_app() -> web.Application:
    async def file(request: web.Request) -> web.Response:
        return web.Response(body=BODY)

    app = web.Application()
    app.router.add_get("/file", file)
    return app


def fetched(outcome: object) -> None:
    assert isinstance(outcome, DownloadResult), outcome
    assert outcome.path.read_bytes() == BODY


@pytest.mark.parametrize("leading", ["", "\n  ", "Bag Attributes\n    friendlyName: as openssl pkcs12 writes\n"])
def test_ca_cert_as_pem_text(engine: str, servers: Servers, tmp_path: Path, leading: str) -> None:
    fetched(fetch_one(engine, servers.url, tmp_path, ca_cert=leading + servers.server.cert_text))


class TunnelProxy:
    """An https proxy that opens a CONNECT tunnel only for its own user, recording each request's head."""

    def __init__(self, user: str, password: str) -> None:
        self.expected = basic_credentials(user, password)
        self.heads: list[tuple[str, dict[str, str]]] = []

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request, *lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, target, _ = request.split(" ")
        headers = {name.lower(): value for name, _, value in (line.partition(": ") for line in lines if line)}
        self.heads.append((method, headers))
        if method != "CONNECT" or headers.get("proxy-authorization") != self.expected:
            writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        host, _, port = target.rpartition(":")
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while chunk := await reader.read(65536):
        writer.write(chunk)
        await writer.drain()
    writer.close()


def test_an_https_remote_through_a_proxy_that_asks_for_credentials(
    engine: str, servers: Servers, tmp_path: Path
) -> None:
    """The proxy's credentials go on the CONNECT to the proxy; what the tunnel carries is the remote's."""
    proxy = TunnelProxy("proxy-user", "proxy-pass")
    with serve_raw(proxy) as proxy_url:
        settings: dict[str, Any] = {"proxy_url": proxy_url, "ca_cert": servers.server.cert}
        fetched(fetch_one(engine, servers.url, tmp_path, proxy_username="proxy-user", proxy_password="proxy-pass",
                          **settings))
        refused = failure_of(fetch_one(engine, servers.url, tmp_path, **settings))
    assert [method for method, _ in proxy.heads] == ["CONNECT", "CONNECT"], proxy.heads
    assert proxy.heads[0][1]["proxy-authorization"] == proxy.expected and "proxy-authorization" not in proxy.heads[1][1]
    assert isinstance(refused.error, HttpStatusError) and refused.error.status == 407, refused.error
    assert "HTTP 407 Proxy Authentication Required (from the proxy)" in str(refused.error), refused.error


def test_ca_cert_as_a_file_still_works_and_none_is_not_trusted(engine: str, servers: Servers, tmp_path: Path) -> None:
    fetched(fetch_one(engine, servers.url, tmp_path, ca_cert=servers.server.cert))
    error = failure_of(fetch_one(engine, servers.url, tmp_path)).error
    assert isinstance(error, TLSVerificationError)
    assert "TLS certificate not trusted: self-signed certificate" in str(error), error
    assert "_ssl.c" not in str(error), "CPython's source line says nothing to a user and changes by build"


@pytest.mark.parametrize("given", ["texts", "one text", "file and text"])
def test_a_client_certificate_as_pem_text(engine: str, servers: Servers, tmp_path: Path, given: str) -> None:
    client = servers.client
    cert_and_key: dict[str, Any] = {
        "texts": {"client_cert": client.cert_text, "client_key": client.key_text},
        "one text": {"client_cert": client.cert_text + client.key_text},
        "file and text": {"client_cert": client.cert, "client_key": client.key_text},
    }[given]
    fetched(fetch_one(engine, servers.mutual_url, tmp_path, ca_cert=servers.server.cert_text, **cert_and_key))


def test_the_mutual_server_refuses_a_client_without_its_certificate(
    engine: str, servers: Servers, tmp_path: Path
) -> None:
    outcome = fetch_one(engine, servers.mutual_url, tmp_path, ca_cert=servers.server.cert_text)
    assert isinstance(failure_of(outcome).error, DownloadConnectionError)


def test_pem_text_goes_through_a_private_file_removed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fresh material (a cached context would load nothing): each file is 0600 while loaded, and gone after."""
    pair = make_pair(tmp_path / "fresh")
    private_dir = tmp_path / "tmp"
    private_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_dir))
    loaded: list[tuple[str, int]] = []
    load_cert_chain = ssl.SSLContext.load_cert_chain

    def recording(context: ssl.SSLContext, certfile: str, keyfile: str | None = None, **kwargs: Any) -> None:
        loaded.extend((name, stat.S_IMODE(os.stat(name).st_mode)) for name in (certfile, keyfile) if name)
        load_cert_chain(context, certfile, keyfile, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", recording)
    build_ssl_context(DownloaderSettings(client_cert=pair.cert_text, client_key=pair.key_text))
    assert len(loaded) == 2 and all(Path(name).parent == private_dir and mode == 0o600 for name, mode in loaded)
    assert list(private_dir.iterdir()) == []


def test_contexts_are_cached_by_a_digest_of_the_text(servers: Servers) -> None:
    client = servers.client
    ca_cert = servers.server.cert_text
    settings = DownloaderSettings(ca_cert=ca_cert, client_cert=client.cert_text, client_key=client.key_text)
    assert build_ssl_context(settings) is build_ssl_context(DownloaderSettings(**settings.__dict__))
    assert build_ssl_context(settings) is not build_ssl_context(DownloaderSettings(ca_cert=servers.server.cert_text))
    cache_keys = repr(list(tls._contexts))
    assert client.key_text.strip().splitlines()[1] not in cache_keys
    assert servers.server.cert_text.strip().splitlines()[1] not in cache_keys


@pytest.mark.parametrize(
    ("which", "shown"),
    [
        ("not a key", "client_key (PEM text) cannot be loaded"),
        ("another's key", "KEY_VALUES_MISMATCH"),
        ("a missing file", "client_key (file /nonexistent/key.pem) cannot be loaded"),
    ],
)
def test_a_bad_key_is_refused_when_the_downloader_is_made_without_showing_it(
    engine: str, servers: Servers, which: str, shown: str
) -> None:
    key: str | Path = {
        "not a key": "-----BEGIN PRIVATE KEY-----\nS3CRETS3CRETS3CRET\n-----END PRIVATE KEY-----\n",
        "another's key": servers.server.key_text,
        "a missing file": Path("/nonexistent/key.pem"),
    }[which]
    with pytest.raises(TLSConfigurationError) as refused:
        downloaders.load(engine)(DownloaderSettings(client_cert=servers.client.cert_text, client_key=key))
    message = str(refused.value)
    assert isinstance(refused.value, ValueError) and message.startswith("client_cert (PEM text) and client_key")
    assert shown in message
    if is_pem(key):
        assert str(key).strip().splitlines()[1] not in message


def test_a_bad_ca_cert_is_refused_when_the_downloader_is_made(engine: str) -> None:
    with pytest.raises(TLSConfigurationError, match=r"ca_cert \(PEM text\) holds no certificate to trust"):
        downloaders.load(engine)(DownloaderSettings(ca_cert="-----BEGIN CERTIFICATE-----\nnot base64\n"))


def test_from_mapping_keeps_pem_text_and_makes_paths_of_the_rest(servers: Servers) -> None:
    settings = DownloaderSettings.from_mapping(
        {"ca_cert": servers.server.cert_text, "client_cert": str(servers.client.cert), "client_key": None}
    )
    assert settings.ca_cert == servers.server.cert_text and settings.client_cert == servers.client.cert
    assert settings.client_key is None
    kinds = {setting.name: setting.kind for setting in REMOTE_SETTINGS}
    assert kinds["ca_cert"] is kinds["client_cert"] is kinds["client_key"] is Path, "a command line takes files"
