"""Where a manifest's files are: each path, quoted, under the directory of the manifest's URL.

The sync, the harness's external programs (curl, aria2c) and the conformance suite all fetch the
same URLs for the same manifest, because they all build them here.
"""

from __future__ import annotations

import functools
from urllib.parse import quote, urljoin

__all__ = ["file_url", "directory_url"]


def file_url(manifest_url: str, relative_path: str) -> str:
    """Where a manifest's file is: its quoted path under the manifest's directory URL.

    For a path parse_manifest accepted (relative, no empty, '.' or '..' segment) joining is
    appending, so the URL join is done once per manifest URL rather than once per file.
    """
    return directory_url(manifest_url) + quote(relative_path)


@functools.lru_cache(maxsize=16)
def directory_url(manifest_url: str) -> str:
    """The URL of the folder the manifest is in, ending in '/'."""
    return urljoin(manifest_url, ".")
