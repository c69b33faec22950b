"""The verdict as Markdown, for a CI comment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from guards.reports import _table as t


def _table(header: Sequence[str], rows: list[list[str]]) -> list[str]:
    if not rows:
        return ["_none_", ""]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return [*lines, ""]


def render_markdown(doc: Mapping[str, Any]) -> str:
    """Headline, criteria (failing first), output statistics, latency and worst rows."""
    lines = [f"## {t.headline(doc)}", ""]
    lines += ["### Criteria", ""]
    lines += _table(["status", "criterion", "slice", "value", "threshold"], t.criteria_rows(doc))
    lines += ["### Outputs", ""]
    lines += _table(["output", *t.STAT_KEYS], t.output_rows(doc))
    lines += ["### Latency", ""]
    lines += _table(["model", "batch", *t.LATENCY_KEYS], t.latency_rows(doc))
    lines += ["### Worst rows", ""]
    lines += _table(["id", "slice", "max_abs", "flip"], t.worst_rows(doc))
    return "\n".join(lines)
