"""pulp-sync-pycurl: a pulp-sync downloader on libcurl's multi interface, installed as the plugin `pycurl`."""

from pulp_sync_pycurl.downloader import CurlDownloader

__all__ = ["CurlDownloader"]
