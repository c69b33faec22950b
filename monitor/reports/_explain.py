"""Plain sentences that say why a drift result got its status, and the report's headline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from monitor.detectors import DriftResult
from monitor.detectors.evaluate import DEFAULT_DRIFT_SHARE, dataset_drift


def fmt(x: float | None) -> str:
    """4 significant digits; None as an em dash."""
    return "—" if x is None else f"{x:.4g}"


def where(r: DriftResult) -> str:
    """'overall' or 'k=v, ...' for a result's slice."""
    return "overall" if r.slice is None else ", ".join(f"{k}={v}" for k, v in r.slice.items())


# Schema statuses (where the detectors report them): a column on one side only.
SCHEMA_SENTENCES = {
    "missing": "missing: the current data does not carry this column (or carries another kind)",
    "new": "new: the reference does not have this column; nothing to compare it with",
}


def explain(r: DriftResult, alpha: float, min_n: int) -> str:
    """Why `r` has its status, e.g. 'above the threshold but not significant at n=212 ...'."""
    schema = SCHEMA_SENTENCES.get(str(r.status))
    if schema is not None:
        return schema
    stat = f"{r.method} = {fmt(r.value)}, threshold {fmt(r.threshold)} ({r.threshold_by})"
    if r.status == "insufficient_data":
        n, side = min((r.n_reference, "reference"), (r.n_current, "current"))
        return f"insufficient data: {r.reason or f'{n} {side} rows < min_n {min_n}'}; no verdict"
    p = "" if r.p_value is None else f", adjusted p = {fmt(r.p_value)}"
    if r.status == "drift" and r.decided_by == "evidence":
        return (
            f"{stat}{p}: drift — within the threshold, but overwhelming evidence "
            f"(p < evidence alpha {r.evidence_alpha:g})"
        )
    if r.status == "drift":
        return f"{stat}{p}: drift — above the threshold and significant at alpha {alpha:g}"
    assert r.value is not None
    if r.value <= r.threshold:
        return f"{stat}{p}: ok — at or below the threshold"
    return (
        f"{stat}{p}: ok — above the threshold but not significant at n={r.n_current} "
        f"(p ≥ alpha {alpha:g})"
    )


@dataclass(frozen=True)
class Headline:
    """The report's first lines: dataset verdict, how many columns drifted, and where."""

    dataset_drift: bool
    columns: int
    drifted_columns: tuple[str, ...]
    drifted_slices: tuple[str, ...]
    insufficient_columns: tuple[str, ...]
    missing_columns: tuple[str, ...] = ()
    new_columns: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        verdict = "DRIFT" if self.dataset_drift else "no drift"
        out = [
            f"Dataset drift: {verdict} — {len(self.drifted_columns)} of {self.columns} columns "
            f"drifted overall (dataset drift when ≥ {DEFAULT_DRIFT_SHARE:.0%} do)"
        ]
        if self.drifted_columns:
            out.append("Drifted columns: " + ", ".join(self.drifted_columns))
        out.append("Drifted slices: " + (", ".join(self.drifted_slices) or "none"))
        if self.missing_columns:
            out.append("Missing from the current data: " + ", ".join(self.missing_columns))
        if self.new_columns:
            out.append("New in the current data: " + ", ".join(self.new_columns))
        if self.insufficient_columns:
            out.append("Insufficient data (no verdict): " + ", ".join(self.insufficient_columns))
        return out


def headline(results: Sequence[DriftResult]) -> Headline:
    """Count drifted columns overall and list drifted (column, slice) pairs."""
    overall = [r for r in results if r.slice is None]
    columns = list(dict.fromkeys(r.column for r in overall))
    drifted = list(dict.fromkeys(r.column for r in overall if r.status == "drift"))
    slices = list(
        dict.fromkeys(f"{r.column} {where(r)}" for r in results if r.slice and r.status == "drift")
    )
    insufficient = [
        c for c in columns if all(r.status == "insufficient_data" for r in overall if r.column == c)
    ]
    missing, new = (
        tuple(dict.fromkeys(r.column for r in overall if str(r.status) == status))
        for status in ("missing", "new")
    )
    return Headline(
        dataset_drift(results), len(columns), tuple(drifted), tuple(slices), tuple(insufficient),
        missing, new,
    )  # fmt: skip
