"""Scheduled segment checks: search a check's frames, mark what persists, store, read back.

A column a check needs that a window lacks, a reference the calibration cannot stand on and
input the search rejects (non-finite labels, scores out of range) are stored as a run with
status `insufficient_data` and the reason: the check ran and says why it found nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from monitor.config import SegmentCheckConfig
from monitor.errors import InputError
from monitor.estimation import fit_calibration
from monitor.segments._find import find_segments
from monitor.segments._inputs import Options
from monitor.segments._label_free import (
    find_drift_segments,
    find_estimated_segments,
    reference_edges,
)
from monitor.segments._report import Segment, SegmentReport
from monitor.storage import SegmentRun, session_factory, transaction


def search_check(check: SegmentCheckConfig, current: Any, reference: Any | None) -> SegmentReport:
    """The check's search of `current` (and `reference`); insufficient_data with the reason
    instead of an error when the data cannot be searched."""
    roles = [c for c in (check.label, check.prediction) if c is not None]
    features = check.features or [c for c in current.columns if c not in roles]
    try:
        _require(check, current, reference, features)
        return _search(check, current, reference, features)
    except InputError as exc:
        return unsearched(check, len(current), str(exc))


def _require(check: SegmentCheckConfig, current: Any, reference: Any | None,
             features: list[str]) -> None:  # fmt: skip
    """InputError naming the first column a window lacks."""
    label, prediction = check.label or "", check.prediction or ""
    needs: dict[str, list[str]] = {
        "labels": [*features, label, prediction],
        "estimated": [*features, prediction],
        "drift": list(features),
    }
    windows: list[tuple[Any, list[str], str]] = [(current, needs[check.mode], "current")]
    if reference is not None:
        ref_needs = {"labels": list(features), "estimated": [*features, label, prediction],
                     "drift": list(features)}  # fmt: skip
        windows.append((reference, ref_needs[check.mode], "reference"))
    for frame, cols, where in windows:
        for col in cols:
            if col not in frame.columns:
                raise InputError(f"column '{col}' missing from the {where} window")


def _search(check: SegmentCheckConfig, current: Any, reference: Any | None,
            features: list[str]) -> SegmentReport:  # fmt: skip
    opts = Options(check.max_predicates, check.min_support, check.min_share, check.top,
                   check.alpha, None, check.bins)  # fmt: skip
    # Numeric bins on the reference's quantiles: the same predicates run after run, so a
    # segment that persists is recognised as such.
    edges = reference_edges(reference, features, check.bins) if reference is not None else None
    if check.mode == "labels":
        assert check.label is not None and check.prediction is not None
        return find_segments(current, check.label, check.prediction, features, check.metric,
                             check.max_predicates, check.min_support, check.min_share,
                             check.top, check.alpha, bins=check.bins, edges=edges)  # fmt: skip
    assert reference is not None
    if check.mode == "drift":
        return find_drift_segments(reference, current, features, opts, edges)
    assert check.label is not None and check.prediction is not None
    labels = reference[check.label]
    if labels.nunique() < 2:
        raise InputError(f"a single class in the reference's '{check.label}'")
    scores = reference[check.prediction].to_numpy(dtype=float, na_value=float("nan"))
    try:
        calibration = fit_calibration(scores, labels.to_numpy(dtype=float, na_value=float("nan")),
                                      check.threshold)  # fmt: skip
    except (TypeError, ValueError) as exc:  # InputError is a ValueError: the reason as it is
        raise InputError(f"reference: {exc}") from None
    return find_estimated_segments(current, check.prediction, calibration, features, opts, edges)


def unsearched(check: SegmentCheckConfig, n_rows: int, reason: str) -> SegmentReport:
    """The report of a run that could not search: status insufficient_data, the reason."""
    metric = {"labels": check.metric, "estimated": "error_rate", "drift": "share"}[check.mode]
    return SegmentReport(metric, n_rows, None, list(check.features), check.min_support,
                         check.max_predicates, check.alpha, 0, 0, 0, [], reason, check.mode,
                         check.mode != "labels", True)  # fmt: skip


def mark_persistence(report: SegmentReport, previous: SegmentRun | None) -> dict[str, Any]:
    """The report as stored: each segment `new`, or `persisting` when the previous run of the
    check reported the same predicates."""
    before = set()
    if previous is not None:
        for raw in previous.report.get("segments", []):
            preds = [(p["feature"], p["value"]) for p in raw.get("predicates", [])]
            before.add(Segment(preds, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0).key())
    doc = report.to_dict()
    for seg, raw in zip(report.segments, doc["segments"], strict=True):
        raw["persistence"] = "persisting" if seg.key() in before else "new"
    return doc


def store_segments(
    engine: Engine, check: SegmentCheckConfig, doc: dict[str, Any], evaluated_at: datetime
) -> int:
    """Append one run (a `mark_persistence` document) to the check's history; the row's id."""
    segments = doc.get("segments", [])
    with transaction(engine) as s:
        row = SegmentRun(
            check_name=check.name, model=check.model, mode=check.mode, status=doc["status"],
            n_rows=int(doc["n_rows"]), n_segments=len(segments),
            n_new=sum(1 for x in segments if x.get("persistence") == "new"),
            report={**doc, "check": check.name, "model": check.model},
            evaluated_at=evaluated_at,
        )  # fmt: skip
        s.add(row)
        s.flush()
        return int(row.id)


def segment_history(
    engine: Engine, check: str | None = None, model: str | None = None, limit: int = 1
) -> list[SegmentRun]:
    """The newest stored runs of a check (or of every check of a model), newest first."""
    t = SegmentRun
    stmt = select(t).order_by(t.evaluated_at.desc(), t.id.desc()).limit(limit)
    if check is not None:
        stmt = stmt.where(t.check_name == check)
    if model is not None:
        stmt = stmt.where(t.model == model)
    with session_factory(engine)() as s:
        return list(s.scalars(stmt))
