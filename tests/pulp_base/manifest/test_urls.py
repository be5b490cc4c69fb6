"""file_url: every reader of a manifest fetches the same URL for the same line."""

from __future__ import annotations

import pytest

from pulp_base.manifest import directory_url, file_url


@pytest.mark.parametrize(
    ("manifest_url", "path", "url"),
    [
        ("http://h/repo/PULP_MANIFEST", "a.iso", "http://h/repo/a.iso"),
        ("http://h/repo/PULP_MANIFEST", "dir/b c ä.iso", "http://h/repo/dir/b%20c%20%C3%A4.iso"),
        ("http://h/PULP_MANIFEST?x=1", "a#1.iso", "http://h/a%231.iso"),
        ("http://h/repo/", "a.iso", "http://h/repo/a.iso"),
    ],
)
def test_a_file_is_its_quoted_path_under_the_manifests_folder(manifest_url: str, path: str, url: str) -> None:
    assert file_url(manifest_url, path) == url
    assert file_url(manifest_url, path).startswith(directory_url(manifest_url))
