"""One SSL context from the settings, used by every engine so they trust exactly the same servers."""

from __future__ import annotations

import functools
import ssl
from pathlib import Path

from downloaders.settings import DownloaderSettings

__all__ = ["build_ssl_context", "trusts_system_defaults"]

_FileKey = tuple[str, int] | None


def build_ssl_context(settings: DownloaderSettings) -> ssl.SSLContext:
    """System trust (or `ca_cert` when given), hostname checks on unless `tls_validation` is off.

    Loading the system's CA store takes ~60 ms, and a sync fetches twice (the manifest, then the
    files), so contexts are cached per process by the settings that shape them, each file named
    with its modification time: a replaced certificate file gives a new context.
    """
    files = (_file_key(settings.ca_cert), _file_key(settings.client_cert), _file_key(settings.client_key))
    return _context(settings.tls_validation, *files)


def trusts_system_defaults(settings: DownloaderSettings) -> bool:
    """True when the settings ask for nothing but the system's trust with hostname checks: what an
    HTTP library's own default context does, so an engine may use that one instead of building its own."""
    return settings.tls_validation and settings.ca_cert is None and settings.client_cert is None


def _file_key(path: Path | None) -> _FileKey:
    if path is None:
        return None
    try:
        return str(path), Path(path).stat().st_mtime_ns
    except OSError:
        return str(path), -1


@functools.lru_cache(maxsize=16)
def _context(tls_validation: bool, ca_cert: _FileKey, client_cert: _FileKey, client_key: _FileKey) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_cert[0] if ca_cert else None)
    if not tls_validation:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if client_cert is not None:
        context.load_cert_chain(client_cert[0], client_key[0] if client_key else None)
    return context
