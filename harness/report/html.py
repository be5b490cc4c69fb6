"""report.html: the whole results folder on one page, from the Jinja2 template templates/report.html.

Jinja2 escapes every value the template writes (autoescape), so a spec's description, a run's error,
a process name or a remote's URL is shown as text, never read as markup, with no escape to forget.
The plots are embedded as data: URIs: report.html alone, copied anywhere or attached to a ticket,
shows every plot; the PNG and SVG files beside it are linked for a closer look.
"""

from __future__ import annotations

import base64
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined

from harness.report.view import ReportView

__all__ = ["report_html"]

_TEMPLATES = Environment(loader=PackageLoader("harness.report", "templates"), autoescape=True,
                         undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
"""The package's templates, every value escaped; a name the template gets wrong fails instead of showing blank."""


def report_html(view: ReportView) -> str:
    """The text of report.html; reads the plots' PNG files in `view.folder` to embed them."""
    images = {name: _data_uri(view.folder / f"{name}.png") for name in view.plots}
    return _TEMPLATES.get_template("report.html").render(view=view, images=images)


def _data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")
