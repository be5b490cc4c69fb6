"""One SSL context from the settings, used by every engine so they trust exactly the same servers.

`ca_cert`, `client_cert` and `client_key` are each a file's path or PEM text (`settings.is_pem`): Pulp
keeps certificates and keys as text, the command line and older plugins give files.
"""

from __future__ import annotations

import hashlib
import os
import re
import ssl
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import NoReturn

from downloaders.errors import TLSConfigurationError
from downloaders.settings import DownloaderSettings, is_pem

__all__ = ["build_ssl_context", "trusts_system_defaults", "untrusted_because"]

_Material = Path | str | None
_Source = tuple[str, str, int] | None
"""A certificate or key setting as the cache knows it: ("file", path, modification time) or ("pem",
sha256 of the text, 0); the text itself, a key's included, is never kept."""

_CACHED = 16
_SOURCE_LINE = re.compile(r"\s*\(_ssl\.c:\d+\)")
_contexts: OrderedDict[tuple[bool, _Source, _Source, _Source], ssl.SSLContext] = OrderedDict()
_contexts_lock = threading.Lock()


def build_ssl_context(settings: DownloaderSettings) -> ssl.SSLContext:
    """System trust (or `ca_cert` when given), hostname checks on unless `tls_validation` is off, and
    the client certificate when given. TLSConfigurationError when one of them cannot be loaded.

    Loading the system's CA store takes ~60 ms, and a sync fetches twice (the manifest, then the
    files), so the last contexts built are kept per process by the settings that shape them: a file
    by its path and modification time (a replaced certificate file gives a new context), PEM text
    by its digest.
    """
    key = (
        settings.tls_validation,
        _source(settings.ca_cert),
        _source(settings.client_cert),
        _source(settings.client_key),
    )
    with _contexts_lock:
        if key in _contexts:
            _contexts.move_to_end(key)
            return _contexts[key]
    context = _new_context(settings)
    with _contexts_lock:
        _contexts[key] = context
        if len(_contexts) > _CACHED:
            _contexts.popitem(last=False)
    return context


def trusts_system_defaults(settings: DownloaderSettings) -> bool:
    """True when the settings ask for nothing but the system's trust with hostname checks: what an
    HTTP library's own default context does, so an engine may use that one instead of building its own."""
    return settings.tls_validation and settings.ca_cert is None and settings.client_cert is None


def _source(value: _Material) -> _Source:
    if value is None:
        return None
    if is_pem(value):
        return "pem", hashlib.sha256(str(value).encode()).hexdigest(), 0
    try:
        return "file", str(value), Path(value).stat().st_mtime_ns
    except OSError:
        return "file", str(value), -1


def _new_context(settings: DownloaderSettings) -> ssl.SSLContext:
    context = _trusting(settings.ca_cert)
    if not settings.tls_validation:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if settings.client_cert is not None:
        _load_client_certificate(context, settings.client_cert, settings.client_key)
    return context


def _trusting(ca_cert: _Material) -> ssl.SSLContext:
    """The default context, trusting `ca_cert` (a file, or PEM text as `cadata`) instead of the system's
    store when given."""
    if ca_cert is None:
        return ssl.create_default_context()
    try:
        if is_pem(ca_cert):
            return ssl.create_default_context(cadata=_text(ca_cert))
        return ssl.create_default_context(cafile=ca_cert)
    except (OSError, ValueError, TypeError) as error:
        given = f"ca_cert ({_described(ca_cert)})"
        raise TLSConfigurationError(f"{given} holds no certificate to trust: {error}") from error


def _load_client_certificate(context: ssl.SSLContext, cert: Path | str, key: _Material) -> None:
    """`load_cert_chain` reads files only: PEM text goes through a private temporary file (mkstemp
    makes it 0600), removed as soon as it is loaded, so a key lies on disk no longer than that. Without
    `key`, the key is read from the certificate's file."""
    try:
        with _as_file(cert) as cert_file, (nullcontext() if key is None else _as_file(key)) as key_file:
            context.load_cert_chain(cert_file, key_file, password=_no_passphrase)
    except (OSError, ValueError) as error:
        given = f"client_cert ({_described(cert)})" + ("" if key is None else f" and client_key ({_described(key)})")
        raise TLSConfigurationError(f"{given} cannot be loaded: {error}") from error


def _no_passphrase() -> NoReturn:
    """Refuse an encrypted key at once: without a password callback OpenSSL would ask on the terminal."""
    raise ValueError("the key is encrypted; give it without a passphrase")


@contextmanager
def _as_file(value: Path | str) -> Iterator[str]:
    """The path of a file holding `value`: its own for a path, a private temporary one for PEM text."""
    if not is_pem(value):
        yield str(value)
        return
    fd, name = tempfile.mkstemp(prefix="pulp-sync-tls-", suffix=".pem")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(_text(value))
        yield name
    finally:
        os.unlink(name)


def _text(pem: _Material) -> str:
    """PEM text as OpenSSL reads it: from its first line's start (the text may begin with whitespace)."""
    return str(pem).strip() + "\n"


def _described(value: _Material) -> str:
    """A setting's value as a message may show it: a file's path, never PEM text (a key is a secret)."""
    return "PEM text" if is_pem(value) else f"file {value}"


def untrusted_because(error: BaseException) -> str:
    """Why a server's certificate was not trusted, in OpenSSL's words ("self-signed certificate",
    "certificate has expired"), found wherever the engine's library wrapped the ssl error; otherwise the
    error's text. Never with the line of CPython's C source it adds ("(_ssl.c:1006)"), which says nothing
    to a user and changes with each Python build."""
    todo: list[object] = [error]
    seen: set[int] = set()
    while todo:
        found = todo.pop()
        if id(found) in seen:
            continue
        seen.add(id(found))
        reason = getattr(found, "verify_message", None)  # aiohttp's wrapper is an SSLCertVerificationError without it
        if isinstance(found, ssl.SSLCertVerificationError) and reason:
            return str(reason)
        if isinstance(found, BaseException):
            todo.extend([*found.args, found.__cause__, found.__context__])
    return _SOURCE_LINE.sub("", str(error))
