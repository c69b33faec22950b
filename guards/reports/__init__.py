"""Renderers of a gate verdict document: JSON, Markdown (CI comments) and one offline HTML file.

Every renderer takes the verdict document (`GuardVerdict.to_dict()`, or a stored one from
`latest_verdict`), so all three show the same content.
"""

from __future__ import annotations

__all__ = ["headline", "localization_lines", "render_html", "render_json", "render_markdown"]

from guards.reports._html import render_html
from guards.reports._json_doc import render_json
from guards.reports._markdown import render_markdown
from guards.reports._table import headline, localization_lines
