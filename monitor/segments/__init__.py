"""Weak-segment discovery: conjunctions of feature predicates where the model does worse.

The lattice search scores slices like SliceLine (`_search`), each evaluated slice is tested
against its complement and the false-discovery rate is controlled over all of them (`_stats`).
With labels (`find_segments`) the loss is the row's error; without, it is the row's expected
error under a CBPE calibration (`find_estimated_segments`) or its window, for segments whose
share moved (`find_drift_segments`). docs/concepts/segments.md explains the method and limits.
"""

from __future__ import annotations

from monitor.segments._find import METRICS, find_segments, row_losses
from monitor.segments._inputs import Options
from monitor.segments._label_free import (
    expected_errors,
    find_drift_segments,
    find_estimated_segments,
)
from monitor.segments._render import render_segments_html, render_segments_markdown
from monitor.segments._report import MODES, Segment, SegmentReport
from monitor.segments._runs import mark_persistence, search_check, segment_history, store_segments

__all__ = [
    "METRICS",
    "MODES",
    "Options",
    "Segment",
    "SegmentReport",
    "expected_errors",
    "find_drift_segments",
    "find_estimated_segments",
    "find_segments",
    "render_segments_html",
    "render_segments_markdown",
    "mark_persistence",
    "row_losses",
    "search_check",
    "segment_history",
    "store_segments",
]
