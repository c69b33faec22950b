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
    """Headline, decisive criterion, run, criteria, latency, output statistics, worst rows."""
    lines = [f"## {t.headline(doc)}", "", f"**{t.decisive(doc)}**", ""]
    lines += [*(f"- {line}" for line in t.run_lines(doc)), ""]
    lines += ["### Criteria", ""]
    lines += _table(t.CRITERIA_HEADER, t.criteria_rows(doc))
    lines += ["### Latency", ""]
    lines += [*(f"**{line}**" for line in t.latency_callouts(doc)), ""]
    lines += _table(t.LATENCY_HEADER, t.latency_rows(doc))
    lines += ["### Outputs", ""]
    lines += _table(["output", *t.STAT_KEYS], t.output_rows(doc))
    lines += ["### Worst rows", ""]
    lines += _table(["id", "slice", "max_abs", "flip"], t.worst_rows(doc))
    lines += _localization(doc)
    return "\n".join(lines)


def _localization(doc: Mapping[str, Any]) -> list[str]:
    summary = t.localization_lines(doc)
    if not summary:
        return []
    lines = ["### Localization", "", *(f"- {line}" for line in summary), ""]
    tensors = t.tensor_rows(doc)
    if tensors:
        lines += _table(["tensor", "op", *t.TENSOR_KEYS, ""], tensors)
        lines += _more(doc, len(tensors))
    if t.range_rows(doc):
        lines += ["#### Calibrated ranges vs reached", ""]
        lines += _table(["tensor", *t.RANGE_KEYS], t.range_rows(doc))
    return lines


def _more(doc: Mapping[str, Any], shown: int) -> list[str]:
    hidden = len(doc["localization"]["tensors"]) - shown
    return [f"_{hidden} more tensors in the JSON report_", ""] if hidden > 0 else []
