"""pulp-sync-httpx: a pulp-sync downloader on httpx, installed as the plugin `httpx`."""

from pulp_sync_httpx.downloader import HttpxDownloader

__all__ = ["HttpxDownloader"]
