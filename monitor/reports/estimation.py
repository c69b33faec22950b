"""The estimate report: the JSON document of `modelwatch estimate` and its HTML page."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from monitor.estimation import Chunk, EstimationResult, MultivariateResult, ReconstructionModel
from monitor.reports._page import page, results_table


def result_dict(r: EstimationResult) -> dict[str, Any]:
    """One result row as the JSON report writes it."""
    chunk = _chunk(r.chunk)
    return {
        "metric": r.metric,
        "slice": r.slice,
        "chunk": chunk,
        "estimated": r.estimated,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "realized": r.realized,
        "threshold_low": r.threshold_low,
        "threshold_high": r.threshold_high,  # losses (regression) only; null otherwise
        "n": r.n,
        "status": r.status,
    }


def _chunk(c: Chunk | None) -> dict[str, Any] | None:
    if c is None:
        return None
    period = None if c.period_start is None else c.period_start.isoformat()
    return {"index": c.index, "start": c.start, "end": c.end, "period_start": period}


def estimate_document(
    results: Sequence[EstimationResult], calibration: dict[str, Any],
    multivariate: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """``{"results": [...], "calibration": {...}, "multivariate": {...} | null}``."""
    return {
        "results": [result_dict(r) for r in results],
        "calibration": calibration,
        "multivariate": multivariate,
    }


def multivariate_dict(
    model: ReconstructionModel, overall: MultivariateResult, chunks: Sequence[MultivariateResult]
) -> dict[str, Any]:
    """The `multivariate` key: the whole current data's verdict, then one row per chunk."""
    return {
        **_mv_row(overall),
        "features": list(model.columns),
        "components": len(model.components),
        "explained_variance": model.explained,
        "chunks": [_mv_row(c) for c in chunks],
    }


def _mv_row(r: MultivariateResult) -> dict[str, Any]:
    chunk = _chunk(r.chunk)
    return {"chunk": chunk, "value": r.value, "threshold": r.threshold_high,
            "threshold_low": r.threshold_low, "n": r.n, "status": r.status}  # fmt: skip


def _fmt(x: float | None) -> str:
    return "" if x is None else f"{x:.4f}"


def _threshold(r: EstimationResult) -> str:
    """The lower threshold; a loss's band, lower – upper."""
    if r.threshold_high is None:
        return _fmt(r.threshold_low)
    return f"{_fmt(r.threshold_low)} – {_fmt(r.threshold_high)}"


def render_estimate_html(
    results: Sequence[EstimationResult], title: str, multivariate: dict[str, Any] | None = None
) -> str:
    """A sortable table of every result: estimate, band, realized, threshold, status."""
    header = ["chunk", "slice", "metric", "estimated", "band", "realized", "threshold", "n",
              "status"]  # fmt: skip
    rows = []
    for r in results:
        where = "overall" if r.slice is None else ",".join(f"{k}={v}" for k, v in r.slice.items())
        band = "" if r.ci_low is None else f"{_fmt(r.ci_low)} – {_fmt(r.ci_high)}"
        chunk = "all" if r.chunk is None else f"{r.chunk.index} [{r.chunk.start}, {r.chunk.end})"
        if r.chunk is not None and r.chunk.period_start is not None:
            chunk = f"{r.chunk.index} {r.chunk.period_start.isoformat()}"
        rows.append([chunk, where, r.metric, _fmt(r.estimated), band, _fmt(r.realized),
                     _threshold(r), str(r.n), r.status])  # fmt: skip
    degraded = sum(r.status == "degraded" for r in results)
    body = (
        f"<h1>{html.escape(title)}</h1><p>{len(results)} results, {degraded} degraded. "
        "Estimates assume the reference's calibration still holds (no concept shift).</p>"
        + results_table("estimates", header, rows, status_col=8)
        + _multivariate_html(multivariate)
    )
    return page(title, body)


def _multivariate_html(mv: dict[str, Any] | None) -> str:
    if mv is None:
        return ""
    rows = [["all" if c["chunk"] is None else str(c["chunk"]["index"]), _fmt(c["value"]),
             _fmt(c["threshold_low"]), _fmt(c["threshold"]), str(c["n"]), c["status"]]
            for c in [mv, *mv["chunks"]]]  # fmt: skip
    head = (f"<h2>Multivariate drift (PCA reconstruction error)</h2><p>{len(mv['features'])} "
            f"features, {mv['components']} components "
            f"({mv['explained_variance']:.0%} of the variance).</p>")  # fmt: skip
    header = ["chunk", "mean error", "lower", "upper", "n", "status"]
    return head + results_table("multivariate", header, rows, status_col=5)
