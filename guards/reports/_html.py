"""The verdict as one self-contained HTML file (inline CSS, no scripts, no CDN)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from guards.reports import _table as t

STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;margin-bottom:1.5rem}
th,td{border:1px solid #ccc;padding:.25rem .6rem;text-align:left;font-variant-numeric:tabular-nums}
th{background:#f3f3f3}.FAIL{color:#b00020;font-weight:bold}.PASS{color:#1b7f3b}
.INCONCLUSIVE{color:#a06000;font-weight:bold}
"""


def _table(header: Sequence[str], rows: list[list[str]], status_col: int | None = None) -> str:
    if not rows:
        return "<p><em>none</em></p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = f' class="{escape(cell)}"' if i == status_col else ""
            cells.append(f"<td{cls}>{escape(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def render_html(doc: Mapping[str, Any]) -> str:
    """The same sections as the Markdown report, as an offline HTML page."""
    verdict = doc["verdict"].upper()
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>modelwatch gate: {escape(verdict)}</title><style>{STYLE}</style></head><body>",
        f"<h1 class='{escape(verdict)}'>{escape(t.headline(doc))}</h1>",
        f"<p class='{escape(verdict)}'>{escape(t.decisive(doc))}</p>",
        "<ul class='run'>",
        *(f"<li>{escape(line)}</li>" for line in t.run_lines(doc)),
        "</ul>",
        "<h2>Criteria</h2>",
        _table(t.CRITERIA_HEADER, t.criteria_rows(doc), 0),
        "<h2>Latency</h2>",
        *(f"<p class='FAIL'>{escape(line)}</p>" for line in t.latency_callouts(doc)),
        _table(t.LATENCY_HEADER, t.latency_rows(doc)),
        "<h2>Outputs</h2>",
        _table(["output", *t.STAT_KEYS], t.output_rows(doc)),
        "<h2>Worst rows</h2>",
        _table(["id", "slice", "max_abs", "flip"], t.worst_rows(doc)),
        *_localization(doc),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _localization(doc: Mapping[str, Any]) -> list[str]:
    summary = t.localization_lines(doc)
    if not summary:
        return []
    parts = ["<h2>Localization</h2>", "<ul>"]
    parts += [f"<li>{escape(line)}</li>" for line in summary]
    parts += ["</ul>", _table(["tensor", "op", *t.TENSOR_KEYS, ""], t.tensor_rows(doc))]
    if t.range_rows(doc):
        parts += ["<h3>Calibrated ranges vs reached</h3>"]
        parts += [_table(["tensor", *t.RANGE_KEYS], t.range_rows(doc))]
    return parts
