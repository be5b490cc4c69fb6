"""PULP_MANIFEST, the format every part of pulp-sync reads or writes: one `relative_path,sha256,size`
per line, each path relative to the manifest's own URL.

On the ground floor of the house (pulp_base): the standard library only, so that the fixture
generator, the sync, the harness and the conformance suite share one parser, one writer and one way
to make a file's URL, and agree on what a path may hold (`path_problem`).
"""

from pulp_base.manifest.parse import (
    MANIFEST_NAME,
    MAX_LINE_BYTES,
    MAX_PATH_LENGTH,
    ManifestEntry,
    ManifestError,
    parse_manifest,
    path_problem,
)
from pulp_base.manifest.urls import directory_url, file_url
from pulp_base.manifest.write import Listed, format_line, manifest_text, write_manifest

__all__ = [
    "MANIFEST_NAME",
    "MAX_LINE_BYTES",
    "MAX_PATH_LENGTH",
    "ManifestEntry",
    "ManifestError",
    "Listed",
    "parse_manifest",
    "path_problem",
    "format_line",
    "manifest_text",
    "write_manifest",
    "file_url",
    "directory_url",
]
