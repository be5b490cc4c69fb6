"""Hostile input: manifests and servers that try to crash a sync, fill its disk or memory, or lead it elsewhere.

The manifest parser is fuzzed (hypothesis): any input yields entries or a ManifestError, and an
accepted entry can name neither a file outside the store nor a URL outside the manifest's directory.
Hostile servers (endless bodies, oversized bodies, endless headers, redirect loops, redirects to
other schemes or hosts, gzip bombs) are small aiohttp apps or raw TCP handlers in the test process;
each is refused with a clear error, having read a bounded number of bytes, and leaves nothing behind.
TLS is verified by default: the fixture app behind a self-signed certificate is refused unless the
remote names it as `ca_cert` or turns `tls_validation` off.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import posixpath
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import hdrs, web
from django.core.exceptions import ValidationError
from django.test import override_settings
from hypothesis import HealthCheck, given, settings, strategies as st

from downloaders import (
    BodyTooLarge,
    DownloadConnectionError,
    SizeMismatch,
    TLSVerificationError,
    UnsupportedURL,
)
from fixtures.server import make_app
from pulp_base.manifest import MAX_LINE_BYTES, ManifestError, file_url, parse_manifest
from pulp_sync.content.store import ArtifactStore, artifact_store
from pulp_sync.content.verify import verify_store
from pulp_sync.models import Artifact, Remote, Repository, RepositoryVersion
from pulp_sync.sync.pipeline import SyncError, sync_repository
from tests.pulp_sync.conftest import ENGINES, manifest_line, write_repository
from tests.pulp_sync.test_cli import invoke
from tests.servers import self_signed_certificate, serve_app, serve_raw

BASE = "https://mirror.example/repos/file/PULP_MANIFEST"
DIGEST = "ab" * 32
BOMB = bytes(32 * 1024 * 1024)
"""32 MiB of zeros: about 32 kB gzip-compressed."""
SECRET = "the-secret-password"
ENDLESS_BOUND = 64 * 1024 * 1024
"""More than socket buffers and one chunk hold: what an endless response may have sent before the client hung up."""


@pytest.fixture(params=[*ENGINES, "pycurl"])
def engine(request: pytest.FixtureRequest) -> str:
    """The built-ins, and the libcurl plugin (examples/pulp-sync-pycurl), offered as the fast choice
    for many small files, so it must face the same hostile input."""
    return request.param


# --- the manifest parser, fuzzed --------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "a",
        "b.iso",
        "/",
        ".",
        "..",
        "\\",
        ":",
        "%2e",
        "?",
        "#",
        "~",
        " ",
        "\t",
        "\x00",
        "\x1b",
        "\x85",
        "é",
        "\u2028",
        "\ufeff",
        "C:",
        "//",
        "file:",
        "http://evil/",
    ]
)
_PATHS = st.lists(_PIECES, max_size=8).map("".join) | st.text(max_size=40)
_DIGESTS = st.sampled_from([DIGEST, DIGEST.upper(), "cd" * 32]) | st.text(max_size=70)
_SIZES = st.integers(min_value=-5, max_value=2**64).map(str) | st.text(max_size=8)
_FIELDS = st.tuples(_PATHS, _DIGESTS, _SIZES).map(",".join)
_LINES = st.lists(_FIELDS | st.text(max_size=80), max_size=12).map(lambda lines: [line + "\n" for line in lines])


def assert_confined(relative_path: str, sha256: str, store: ArtifactStore) -> None:
    """An accepted entry names a path under any directory, a URL under the manifest's, a file in the store."""
    assert posixpath.normpath("/repo/" + relative_path).startswith("/repo/")
    url = urlsplit(file_url(BASE, relative_path))
    assert (url.scheme, url.netloc, url.query, url.fragment) == ("https", "mirror.example", "", "")
    assert url.path.startswith("/repos/file/") and ".." not in url.path.split("/")
    assert store.path_for(sha256).resolve().is_relative_to(store.root.resolve())


@settings(max_examples=400, deadline=None)
@given(lines=_LINES)
def test_any_lines_give_entries_or_a_manifest_error(lines: list[str], tmp_path_factory: pytest.TempPathFactory) -> None:
    store = ArtifactStore(tmp_path_factory.getbasetemp() / "confined-store")
    try:
        entries = list(parse_manifest(lines))
    except ManifestError as error:
        assert 1 <= error.line <= len(lines) and str(error).startswith(f"PULP_MANIFEST line {error.line}: ")
        return
    for entry in entries:
        assert_confined(entry.relative_path, entry.sha256, store)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=2000) | _LINES.map(lambda lines: "".join(lines).encode()))
def test_any_file_gives_entries_or_a_manifest_error(body: bytes, tmp_path: Path) -> None:
    manifest = tmp_path / "PULP_MANIFEST"
    manifest.write_bytes(body)
    try:
        entries = list(parse_manifest(manifest))
    except ManifestError as error:
        assert error.line >= 1
        return
    assert len(entries) <= body.count(b"\n") + 1


def test_a_file_without_line_breaks_is_read_one_line_length_at_a_time(tmp_path: Path) -> None:
    manifest = tmp_path / "PULP_MANIFEST"
    manifest.write_bytes(b"a" * (32 * 1024 * 1024))
    tracemalloc.start()
    try:
        with pytest.raises(ManifestError, match=f"PULP_MANIFEST line 1: is longer than {MAX_LINE_BYTES} bytes"):
            list(parse_manifest(manifest))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024, f"{peak} bytes held to refuse a 32 MiB line"


def test_a_gzip_compressed_manifest_is_named(tmp_path: Path) -> None:
    manifest = tmp_path / "PULP_MANIFEST"
    manifest.write_bytes(gzip.compress(f"a.iso,{DIGEST},5\n".encode()))
    with pytest.raises(ManifestError, match="line 1: is gzip-compressed data, not text"):
        list(parse_manifest(manifest))


# --- hostile servers ---------------------------------------------------------------------------------


class Hostile:
    """An aiohttp app of bad behaviours, one per folder; it counts the body bytes it managed to send."""

    def __init__(self) -> None:
        self.sent = 0
        self.elsewhere = "ftp://127.0.0.1/PULP_MANIFEST"
        self.bomb = gzip.compress(BOMB, compresslevel=9)
        self.tarball = gzip.compress(b"a tarball's bytes\n" * 100)
        self.app = web.Application()
        routes = {
            "/endless/PULP_MANIFEST": self.text(manifest_line("big.bin", bytes(1000))),
            "/endless/big.bin": self.endless,
            "/endless-manifest/PULP_MANIFEST": self.endless,
            "/longer/PULP_MANIFEST": self.text(manifest_line("f.bin", bytes(1000))),
            "/longer/f.bin": self.bytes(bytes(5000)),
            "/loop/PULP_MANIFEST": self.redirect("/loop/again"),
            "/loop/again": self.redirect("/loop/PULP_MANIFEST"),
            "/elsewhere/PULP_MANIFEST": self.to_elsewhere,
            "/bomb/PULP_MANIFEST": self.text(manifest_line("bomb.bin", BOMB)),
            "/bomb/bomb.bin": self.bytes(self.bomb, gzip=True),
            "/gzip-manifest/PULP_MANIFEST": self.bytes(self.bomb, gzip=True),
            "/tarball/PULP_MANIFEST": self.text(manifest_line("a.tar.gz", self.tarball)),
            "/tarball/a.tar.gz": self.bytes(self.tarball, gzip=True),
        }
        for path, handler in routes.items():
            self.app.router.add_get(path, handler)

    async def to_elsewhere(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(self.elsewhere)

    @staticmethod
    def text(body: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(text=body)

        return handler

    @staticmethod
    def bytes(body: bytes, gzip: bool = False) -> Any:
        async def handler(request: web.Request) -> web.Response:
            headers = {hdrs.CONTENT_ENCODING: "gzip"} if gzip else {}
            return web.Response(body=body, headers=headers, content_type="application/octet-stream")

        return handler

    @staticmethod
    def redirect(location: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            raise web.HTTPFound(location)

        return handler

    async def endless(self, request: web.Request) -> web.StreamResponse:
        """Zeros without end (chunked, no length), until the client goes away."""
        response = web.StreamResponse()
        await response.prepare(request)
        chunk = bytes(64 * 1024)
        try:
            while True:
                await response.write(chunk)
                self.sent += len(chunk)
        except (ConnectionError, asyncio.CancelledError):
            return response


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[Hostile, str]]:
    server = Hostile()
    with serve_app(server.app) as url:
        yield server, url


def sync_fails(url: str, engine: str, **settings: Any) -> SyncError:
    """Sync from `url` and return the SyncError it must end in; the store must agree with the database."""
    remote = Remote.objects.create(name="hostile", url=url, downloader=engine, max_retries=1, **settings)
    with pytest.raises(SyncError) as caught:
        sync_repository(remote, Repository.objects.create(name="hostile"))
    assert not RepositoryVersion.objects.exists()
    assert verify_store(artifact_store()).problems() == 0
    assert list(artifact_store().temp_dir.iterdir()) == []
    return caught.value


def test_an_endless_body_is_cut_at_the_manifests_size(db: Path, hostile: tuple[Hostile, str], engine: str) -> None:
    server, url = hostile
    before = server.sent
    failure = sync_fails(url + "endless/PULP_MANIFEST", engine)
    assert isinstance(failure.error, SizeMismatch) and failure.error.expected == 1000
    assert str(failure).startswith("could not download big.bin after 2 attempt(s): size mismatch: expected 1000 bytes")
    assert not Artifact.objects.exists()
    assert server.sent - before < ENDLESS_BOUND, "the client hung up"


def test_an_endless_manifest_is_cut_at_the_limit(db: Path, hostile: tuple[Hostile, str], engine: str) -> None:
    server, url = hostile
    before = server.sent
    with override_settings(PULP_SYNC_MAX_MANIFEST_BYTES=100_000):
        failure = sync_fails(url + "endless-manifest/PULP_MANIFEST", engine)
    assert server.sent - before < ENDLESS_BOUND, "the client hung up"
    assert isinstance(failure.error, BodyTooLarge)
    assert str(failure).startswith("could not fetch the manifest: the body is larger than the limit of 100000 bytes")
    assert str(failure).endswith("raise PULP_SYNC_MAX_MANIFEST_BYTES if it is genuine")


def test_a_body_longer_than_the_manifest_says_is_refused(db: Path, hostile: tuple[Hostile, str], engine: str) -> None:
    failure = sync_fails(hostile[1] + "longer/PULP_MANIFEST", engine)
    assert isinstance(failure.error, SizeMismatch) and "expected 1000 bytes, got " in str(failure)


def test_a_redirect_loop_ends(db: Path, hostile: tuple[Hostile, str], engine: str) -> None:
    failure = sync_fails(hostile[1] + "loop/PULP_MANIFEST", engine)
    assert str(failure).startswith("could not fetch the manifest: too many redirects")


def test_a_redirect_to_another_scheme_is_refused(
    db: Path, hostile: tuple[Hostile, str], engine: str, tmp_path: Path
) -> None:
    server, url = hostile
    secret = tmp_path / "secret.txt"
    secret.write_text(manifest_line("secret.txt", b"private"))
    for server.elsewhere in (secret.as_uri(), "ftp://127.0.0.1/PULP_MANIFEST"):
        failure = sync_fails(url + "elsewhere/PULP_MANIFEST", engine)
        assert isinstance(failure.error, UnsupportedURL), failure
        assert str(failure).startswith("could not fetch the manifest: "), failure
        Repository.objects.all().delete()
        Remote.objects.all().delete()
    assert not Artifact.objects.exists()


def test_a_gzip_bomb_is_not_inflated(db: Path, hostile: tuple[Hostile, str], engine: str) -> None:
    """Content-Encoding is not decoded: the bytes verified and stored are the ones sent, never the inflated ones."""
    server, url = hostile
    failure = sync_fails(url + "bomb/PULP_MANIFEST", engine)
    assert isinstance(failure.error, SizeMismatch)
    assert f"expected {len(BOMB)} bytes, got {len(server.bomb)}" in str(failure)


def test_a_gzip_encoded_manifest_is_refused_clearly(db: Path, hostile: tuple[Hostile, str], engine: str) -> None:
    failure = sync_fails(hostile[1] + "gzip-manifest/PULP_MANIFEST", engine)
    assert isinstance(failure.error, ManifestError)
    assert "line 1: is gzip-compressed data, not text" in str(failure) and "nothing was changed" in str(failure)


def test_a_gzip_file_sent_with_content_encoding_is_stored_as_sent(
    db: Path, hostile: tuple[Hostile, str], engine: str
) -> None:
    """A .tar.gz labelled Content-Encoding: gzip: the manifest names the compressed bytes, and those are kept."""
    server, url = hostile
    remote = Remote.objects.create(name="tarball", url=url + "tarball/PULP_MANIFEST", downloader=engine)
    report = sync_repository(remote, Repository.objects.create(name="tarball"))
    assert report.version == 1
    digest = hashlib.sha256(server.tarball).hexdigest()
    assert artifact_store().path_for(digest).read_bytes() == server.tarball


async def endless_headers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A status line, then headers without end."""
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\n")
    try:
        for index in range(10**7):
            writer.write(b"X-Filler-%d: %s\r\n" % (index, b"a" * 100))
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def one_endless_header(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A status line, then one header whose value never ends."""
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\nX-Long: ")
    try:
        for _ in range(10**6):
            writer.write(b"a" * 1000)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


@pytest.mark.parametrize("handler", [endless_headers, one_endless_header])
def test_huge_headers_are_refused(db: Path, engine: str, handler: Any) -> None:
    with serve_raw(handler) as url:
        failure = sync_fails(url + "PULP_MANIFEST", engine)
    assert isinstance(failure.error, DownloadConnectionError), failure
    assert str(failure).startswith("could not fetch the manifest: ")
    assert any(word in str(failure) for word in ("header", "bytes when reading")), failure


def test_only_http_and_https_remotes(db: Path, engine: str) -> None:
    for url in ("ftp://127.0.0.1/PULP_MANIFEST", "file:///etc/passwd"):
        with pytest.raises(ValidationError, match="Enter an http or https URL"):
            Remote(name="scheme", url=url, downloader=engine).full_clean()
        result = invoke("sync", url, "--repository", "scheme", "--downloader", engine)
        assert result.exit_code == 2 and "url: Enter an http or https URL." in result.stderr, result.stderr
        assert not Remote.objects.exists()
    unchecked = Remote.objects.create(name="unchecked", url="file:///etc/passwd", downloader=engine)
    with pytest.raises(SyncError, match="only http and https URLs are fetched, not 'file'") as caught:
        sync_repository(unchecked, Repository.objects.create(name="unchecked"))
    assert isinstance(caught.value.error, UnsupportedURL)


def test_credentials_stay_with_their_host_across_redirects(db: Path, engine: str, tmp_path: Path) -> None:
    """A redirect to another host (a mirror, or an attacker) must not carry the remote's password."""
    seen: list[str | None] = []
    body = b"served by the other host"

    async def other_host(request: web.Request) -> web.Response:
        seen.append(request.headers.get(hdrs.AUTHORIZATION))
        return web.Response(body=body)

    other = web.Application()
    other.router.add_get("/x.bin", other_host)
    with serve_app(other) as other_url:
        first = web.Application()

        async def manifest(request: web.Request) -> web.Response:
            assert request.headers.get(hdrs.AUTHORIZATION), "the remote's own host gets the credentials"
            return web.Response(text=manifest_line("x.bin", body))

        first.router.add_get("/repo/PULP_MANIFEST", manifest)
        first.router.add_get("/repo/x.bin", Hostile.redirect(other_url.replace("127.0.0.1", "localhost") + "x.bin"))
        with serve_app(first) as url:
            remote = Remote.objects.create(
                name="auth", url=url + "repo/PULP_MANIFEST", downloader=engine, username="user", password=SECRET
            )
            assert sync_repository(remote, Repository.objects.create(name="auth")).version == 1
    assert seen == [None]


# --- TLS -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def https_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The fixture app behind a self-signed certificate for 127.0.0.1; its base URL and the certificate."""
    import ssl

    folder = tmp_path_factory.mktemp("tls")
    cert, key = self_signed_certificate(folder)
    write_repository(folder / "tree" / "repo", {"a.bin": b"over TLS\n", "b.bin": bytes(3000)})
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    with serve_app(make_app(folder / "tree"), context) as url:
        yield url, cert


def test_tls_is_verified_by_default(db: Path, https_server: tuple[str, Path], engine: str) -> None:
    url, cert = https_server
    failure = sync_fails(url + "repo/PULP_MANIFEST", engine)
    assert isinstance(failure.error, TLSVerificationError)
    assert "could not fetch the manifest: TLS certificate not trusted" in str(failure)
    assert str(failure).endswith("(ca_cert; `sync --ca-cert FILE`)"), "the setting that fixes it, not the URL"


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
@pytest.mark.parametrize("trust", ["ca_cert", "tls_validation_off"])
def test_tls_with_the_ca_or_validation_off(db: Path, https_server: tuple[str, Path], engine: str, trust: str) -> None:
    url, cert = https_server
    settings = {"ca_cert": str(cert)} if trust == "ca_cert" else {"tls_validation": False}
    remote = Remote.objects.create(name="tls", url=url + "repo/PULP_MANIFEST", downloader=engine, **settings)
    report = sync_repository(remote, Repository.objects.create(name="tls"))
    assert (report.version, report.artifacts_downloaded) == (1, 2)
    assert verify_store(artifact_store()).problems() == 0
