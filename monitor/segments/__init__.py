"""Weak-segment discovery: conjunctions of feature predicates where the model does worse.

The lattice search scores slices like SliceLine (`_search`), each evaluated slice is tested
against its complement and the false-discovery rate is controlled over all of them (`_stats`).
docs/concepts/segments.md explains the method and its limits.
"""

from __future__ import annotations

from monitor.segments._find import METRICS, Segment, SegmentReport, find_segments, row_losses
from monitor.segments._render import render_segments_html, render_segments_markdown

__all__ = [
    "METRICS",
    "Segment",
    "SegmentReport",
    "find_segments",
    "render_segments_html",
    "render_segments_markdown",
    "row_losses",
]
