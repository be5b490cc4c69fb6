"""The downloaders' exception tree.

    DownloadError                 every failure of one request; carries the URL
    ├── UnsupportedURL            not http or https: never fetched
    ├── AddressRefused            a host or address the address policy refuses: never connected to
    ├── HttpStatusError           an answer that is not 2xx (retryable: 429 and 5xx)
    ├── DownloadTimeout           connect, read or total timeout (retryable)
    ├── DownloadConnectionError   refused, reset, closed early (retryable)
    │   └── TLSVerificationError  the server's certificate is not trusted (not retryable)
    ├── BodyTooLarge              more bytes than the request's max_size (not retryable)
    ├── LocalStorageError         the body cannot be written here: disk full, no permission (not retryable)
    └── VerificationError         the bytes are not the ones the manifest names
        ├── SizeMismatch
        └── DigestMismatch

    TLSConfigurationError         (a ValueError, not a download's failure) ca_cert, client_cert or
                                  client_key cannot be loaded: refused when the downloader is made
    SettingError                  (a ValueError) a Remote setting's value no engine can use: refused
                                  when the settings are made, and where a remote is saved

Each engine translates its own library's errors into these at one place, so the sync pipeline and
the conformance tests see the same types from every downloader.
"""

from __future__ import annotations

from downloaders import defaults

__all__ = [
    "printable",
    "quoted",
    "DownloadError",
    "UnsupportedURL",
    "AddressRefused",
    "HttpStatusError",
    "DownloadTimeout",
    "DownloadConnectionError",
    "TLSVerificationError",
    "BodyTooLarge",
    "LocalStorageError",
    "VerificationError",
    "SizeMismatch",
    "DigestMismatch",
    "TLSConfigurationError",
    "SettingError",
]


def printable(text: str) -> str:
    """`text` with every character that does not print (raw bytes of an answer, escape sequences)
    written as its escape: safe to show on a terminal or in an API answer."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def quoted(text: object) -> str:
    """A library's error text as an error of ours may quote it: `printable`, at most
    `defaults.QUOTED_CHARS` characters. The text may carry what the server answered (aiohttp puts a
    bad status line in its error), and that must not reach a sync's users raw or whole."""
    shown = printable(str(text))
    return shown if len(shown) <= defaults.QUOTED_CHARS else shown[: defaults.QUOTED_CHARS - 3] + "..."


class DownloadError(Exception):
    """A request could not be turned into a verified file."""

    retryable: bool = False

    def __init__(self, url: str, message: str) -> None:
        super().__init__(f"{message} ({url})")
        self.url = url
        self.message = message


class UnsupportedURL(DownloadError):
    """Only http and https are fetched: a manifest cannot make us read files or other schemes."""


class AddressRefused(DownloadError):
    """The URL's host, or an address it resolves to, is refused by the remote-address policy
    (`downloaders.addresses`): no connection was made. Not retryable."""


class HttpStatusError(DownloadError):
    """The server answered with a status other than 2xx."""

    def __init__(self, url: str, status: int, reason: str = "", retry_after: float | None = None) -> None:
        super().__init__(url, f"HTTP {status} {reason}".rstrip())
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.status == 429 or self.status >= 500


class DownloadTimeout(DownloadError):
    """A connect, read or total timeout ran out; raise the matching *_timeout setting if the link is slow."""

    retryable = True


class DownloadConnectionError(DownloadError):
    """The connection failed or ended before the whole body arrived."""

    retryable = True


class TLSVerificationError(DownloadConnectionError):
    """The certificate could not be verified; give `ca_cert`, or turn `tls_validation` off knowingly."""

    retryable = False


class BodyTooLarge(DownloadError):
    """The server sent more than the request's `max_size`: refused before it could fill the disk."""

    def __init__(self, url: str, limit: int) -> None:
        super().__init__(url, f"the body is larger than the limit of {limit} bytes")
        self.limit = limit


class LocalStorageError(DownloadError):
    """The body could not be written to the temp dir (disk full, no permission): not the server's fault."""

    def __init__(self, url: str, error: OSError) -> None:
        super().__init__(url, f"could not write the download to disk: {error.strerror or error}")
        self.errno = error.errno


class VerificationError(DownloadError):
    """The body does not match the size or sha256 the request expects."""

    retryable = True


class SizeMismatch(VerificationError):
    """The body is longer or shorter than the expected size."""

    def __init__(self, url: str, expected: int, actual: int) -> None:
        super().__init__(url, f"size mismatch: expected {expected} bytes, got {actual}")
        self.expected = expected
        self.actual = actual


class DigestMismatch(VerificationError):
    """The body's sha256 is not the expected one."""

    def __init__(self, url: str, expected: str, actual: str) -> None:
        super().__init__(url, f"sha256 mismatch: expected {expected}, got {actual}")
        self.expected = expected
        self.actual = actual


class TLSConfigurationError(ValueError):
    """`ca_cert`, `client_cert` or `client_key` cannot be loaded (not PEM, a key that does not match its
    certificate, a missing file). A ValueError, as every bad setting is: the downloader refuses it when
    it is made, before any fetch. The message names the setting and the reason, never the PEM text
    (a key is a secret)."""


class SettingError(ValueError):
    """A Remote setting's value that a sync could not use: a header that would end the request early or
    that engines send differently, a timeout no engine can wait for, a proxy URL of a scheme no engine
    speaks. Its message starts with the setting's name, so the command line, the API and the harness's
    specs each refuse with it as it is (downloaders/settings.py holds the rules)."""
