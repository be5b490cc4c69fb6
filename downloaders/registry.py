"""Finding downloaders: every one, built-in or plugin, is an entry point in `pulp_sync.downloaders`."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

from downloaders.base import Downloader

__all__ = ["ENTRY_POINT_GROUP", "UnknownDownloader", "available", "load"]

ENTRY_POINT_GROUP = "pulp_sync.downloaders"


class UnknownDownloader(LookupError):
    """No installed package registers a downloader of that name."""


def _entry_points() -> dict[str, EntryPoint]:
    return {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}


def available() -> dict[str, str]:
    """Installed downloaders: name -> "module:Class" they come from."""
    return {name: point.value for name, point in sorted(_entry_points().items())}


def load(name: str) -> type[Downloader]:
    """The downloader class registered as `name`."""
    points = _entry_points()
    if name not in points:
        known = ", ".join(sorted(points)) or "none (is pulp-sync installed, e.g. `pip install -e .`?)"
        raise UnknownDownloader(f"no downloader named {name!r}; installed: {known}")
    downloader: type[Downloader] = points[name].load()  # what the plugin registered (an entry point is untyped)
    return downloader
