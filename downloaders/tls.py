"""One SSL context from the settings, used by every engine so they trust exactly the same servers."""

from __future__ import annotations

import ssl

from downloaders.settings import DownloaderSettings

__all__ = ["build_ssl_context"]


def build_ssl_context(settings: DownloaderSettings) -> ssl.SSLContext:
    """System trust (or `ca_cert` when given), hostname checks on unless `tls_validation` is off."""
    context = ssl.create_default_context(cafile=str(settings.ca_cert) if settings.ca_cert else None)
    if not settings.tls_validation:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if settings.client_cert is not None:
        context.load_cert_chain(
            str(settings.client_cert), str(settings.client_key) if settings.client_key else None
        )
    return context
