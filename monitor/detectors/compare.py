"""Comparing two profiles with one detector, and Benjamini–Hochberg across many comparisons."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from monitor.detectors._base import (
    DEFAULT_ALPHA,
    MIN_N,
    Bound,
    Detector,
    DriftResult,
    Pair,
    Status,
)
from monitor.detectors._evidence import DEFAULT_EVIDENCE_ALPHA, exact_counts
from monitor.detectors._holdout import tested
from monitor.detectors._null import p_value as null_p_value
from monitor.errors import InputError
from monitor.profiles.kinds import Profile


def compare(
    detector: Detector,
    reference: Profile,
    current: Profile,
    threshold: float | Bound,
    slice_: dict[str, str] | None = None,
    min_n: int = MIN_N,
    alpha: float = DEFAULT_ALPHA,
    evidence_alpha: float = DEFAULT_EVIDENCE_ALPHA,
) -> DriftResult:
    """One comparison: drift when value > threshold and p < alpha (no multiple-testing step),
    or, on exact-count columns, when p < evidence_alpha (see `evidence`).

    A plain number as `threshold` is a constant bound; a `Bound` also says what set it.
    """
    bound = threshold if isinstance(threshold, Bound) else Bound(float(threshold), "constant")
    kind = reference.kind
    if kind not in detector.kinds:
        raise InputError(
            f"column '{reference.spec.column}': method '{detector.name}' does not accept "
            f"{kind} columns"
        )
    n_ref, n_cur = detector.size(reference), detector.size(current)
    evidence = evidence_alpha if detector.evidence and exact_counts(reference) else None
    if min(n_ref, n_cur) < min_n:
        return drift_result(detector, reference, bound, slice_, (n_ref, n_cur), evidence, min_n)
    pair = Pair(reference, current)
    reason = None if detector.degenerate is None else detector.degenerate(pair)
    if reason is not None:
        return drift_result(detector, reference, bound, slice_, (n_ref, n_cur), evidence, reason)
    value = _finite(detector.score(pair))
    p = _finite(null_p_value(detector, tested(detector, pair)))
    found = (value, p, verdict(value, bound.value, p, alpha, evidence))
    return drift_result(detector, reference, bound, slice_, (n_ref, n_cur), evidence, found=found)


def drift_result(
    detector: Detector,
    reference: Profile,
    bound: Bound,
    slice_: dict[str, str] | None,
    sizes: tuple[int, int],
    evidence_alpha: float | None,
    why: int | str = MIN_N,
    found: tuple[float, float, Status] | None = None,
) -> DriftResult:
    """A comparison's result: `insufficient_data` (what a side of fewer than `why` = min_n
    rows gets, or a pair the detector cannot judge: `why` its reason), or, given `found`
    (value, p-value, status), the compared one (`compare`)."""
    value, p, status = found or (None, None, "insufficient_data")
    reason = None
    if found is None:
        reason = why if isinstance(why, str) else _too_few(sizes, why)
    return _built({
        "column": reference.spec.column,
        "slice": slice_,
        "kind": reference.kind,
        "method": detector.name,
        "value": value,
        "threshold": float(bound.value),
        "p_value": p,
        "n_reference": sizes[0],
        "n_current": sizes[1],
        "status": status,
        "threshold_by": bound.source,
        "evidence_alpha": evidence_alpha,
        "reason": reason,
    })  # fmt: skip


def _too_few(sizes: tuple[int, int], min_n: int) -> str:
    n, side = min((sizes[0], "reference"), (sizes[1], "current"))
    return f"{n} {side} rows < min_n {min_n}"


def verdict(
    value: float, threshold: float, p: float, alpha: float, evidence_alpha: float | None
) -> Status:
    """The one drift rule: above the threshold and significant, or overwhelming evidence."""
    if value > threshold and p < alpha:
        return "drift"
    return "drift" if evidence_alpha is not None and p < evidence_alpha else "ok"


def benjamini_hochberg(results: Sequence[DriftResult], alpha: float) -> list[DriftResult]:
    """Adjust p-values across `results` (BH step-up) and set status from the adjusted ones.

    A result drifts when its value exceeds its threshold AND its BH-adjusted p-value is below
    ``alpha``, or when the adjusted p-value is below the result's evidence alpha; the reported
    p_value is the adjusted one. Results without a p-value keep theirs.
    """
    idx = [i for i, r in enumerate(results) if r.p_value is not None]
    out = list(results)
    if not idx:
        return out
    adjusted = adjust_p_values([results[i].p_value or 0.0 for i in idx], "benjamini_hochberg")
    for i, q in zip(idx, adjusted, strict=True):
        r = results[i]
        assert r.value is not None
        status = verdict(r.value, r.threshold, q, alpha, r.evidence_alpha)
        out[i] = _adjusted(r, q, status)
    return out


def adjust_p_values(p_values: Sequence[float], method: str) -> list[float]:
    """P-values adjusted for testing them together, in their order.

    `benjamini_hochberg` (step-up): rejecting those below q keeps the false discovery rate
    at most q when the tests are independent or positively dependent (PRDS). `holm`
    (step-down): rejecting those below q keeps the chance of any false rejection at most q
    under any dependence. `none`: the p-values as given. Another name is a ValueError.
    """
    raw = np.asarray(p_values, dtype=np.float64)
    m = raw.size
    if method == "none" or m == 0:
        return [float(p) for p in raw]
    order = np.argsort(raw, kind="stable")
    if method == "benjamini_hochberg":
        scaled = raw[order] * m / np.arange(1, m + 1)
        adjusted_sorted = np.minimum.accumulate(scaled[::-1])[::-1]
    elif method == "holm":
        adjusted_sorted = np.maximum.accumulate(raw[order] * np.arange(m, 0, -1))
    else:
        raise ValueError(f"unknown correction {method!r}; expected benjamini_hochberg, holm, none")
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted.clip(0.0, 1.0)
    return [float(p) for p in adjusted]


def _adjusted(result: DriftResult, p_value: float, status: Status) -> DriftResult:
    """`replace(result, p_value=..., status=...)` without its per-call field introspection."""
    return _built({**result.__dict__, "p_value": p_value, "status": status})


def _built(fields: dict[str, Any]) -> DriftResult:
    """A DriftResult of every one of its fields, without the frozen dataclass's constructor:
    ~5x cheaper, and a burst builds ~300 per window (DriftResult has no __post_init__ to run;
    tests/monitor/detectors/test_detectors.py checks that the two agree)."""
    out = object.__new__(DriftResult)
    out.__dict__.update(fields)
    return out


def _finite(x: float) -> float:
    # Policy: never NaN in a result. A statistic is finite by construction; guard anyway.
    if not np.isfinite(x):
        raise ValueError(f"non-finite statistic {x!r}")
    return float(x)
