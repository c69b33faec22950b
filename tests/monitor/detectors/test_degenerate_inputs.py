"""Degenerate inputs, table-driven over every registered detector (issue 36).

A constant column, an all-null or all-non-finite side, one category, a tiny sample, a value
too rare for the reference to have seen, huge finite values: each either gets a verdict that
is right for it, or ``insufficient_data`` with a reason. Never NaN, and never a p-value that
identical null draws or a bucket the reference could not fill made up.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from monitor.detectors import DriftResult, compare, detectors
from monitor.profiles import spec_from_reference

NAN, INF = float("nan"), float("inf")
N = 1000


def _num(values: list[float] | np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def _cat(*parts: tuple[str | None, int]) -> np.ndarray:
    return np.array([v for v, n in parts for _ in range(n)], dtype=object)


SPREAD = _num(np.linspace(0.0, 1.0, N))
TWO = _cat(("a", N // 2), ("b", N // 2))
HUGE = _num([1e300] * (N // 2) + [-1e300] * (N // 2))

# (name, kind, reference, current, what every detector must give)
#   "none": insufficient_data with a reason, for every detector but missing_rate (it counts
#   rows, nulls included, so an all-null side is a comparison it can make);
#   "calm": no drift (ok, or insufficient_data with a reason).
CASES: list[tuple[str, str, np.ndarray, np.ndarray, str]] = [
    ("tiny current", "numeric", SPREAD, _num(np.arange(5.0)), "none"),
    ("all-null current", "numeric", SPREAD, _num([NAN] * N), "none"),
    ("only non-finite", "numeric", SPREAD, _num([INF, -INF, NAN] * 300 + list(range(10))), "none"),
    ("tiny reference", "numeric", _num(np.arange(5.0)), SPREAD, "none"),
    ("constant, same", "numeric", _num([3.0] * N), _num([3.0] * N), "calm"),
    ("huge finite values", "numeric", HUGE, HUGE.copy(), "calm"),
    ("tiny categorical", "categorical", TWO, _cat(("a", 5)), "none"),
    ("all-null categorical", "categorical", TWO, _cat((None, N)), "none"),
    ("one category, same", "categorical", _cat(("a", N)), _cat(("a", N)), "calm"),
    # One row of a value the reference never had: identical null draws once made this p = 0,
    # overwhelming evidence on an exact-count column.
    ("one unseen row", "categorical", _cat(("a", N)), _cat(("a", N - 1), ("b", 1)), "calm"),
    ("rare unseen rows", "categorical", TWO, _cat(("a", 499), ("b", 499), ("zz", 2)), "calm"),
]
Check = Callable[[DriftResult], None]


def _results(kind: str, ref: np.ndarray, cur: np.ndarray) -> list[DriftResult]:
    spec = spec_from_reference("x", ref, kind=kind)  # type: ignore[arg-type]
    a, b = spec.profile(ref), spec.profile(cur)
    found = [d for d in detectors().values() if kind in d.kinds]
    assert found, kind
    return [compare(d, a, b, d.default_threshold) for d in found]


def _finite_or_none(r: DriftResult) -> None:
    for x in (r.value, r.p_value):
        assert x is None or math.isfinite(x), r
    assert r.p_value is None or 0.0 <= r.p_value <= 1.0, r
    assert (r.status == "insufficient_data") == (r.reason is not None), r
    if r.status == "insufficient_data":
        assert r.value is None and r.p_value is None and r.reason, r


@pytest.mark.parametrize(("name", "kind", "ref", "cur", "want"), CASES, ids=[c[0] for c in CASES])
def test_every_detector_gives_a_verdict_or_a_reason(
    name: str, kind: str, ref: np.ndarray, cur: np.ndarray, want: str
) -> None:
    for r in _results(kind, ref, cur):
        _finite_or_none(r)
        if want == "none" and r.method != "missing_rate":
            assert r.status == "insufficient_data", r
        if want == "calm":
            assert r.status != "drift", r


def test_the_reason_says_which_side_is_short_and_reaches_the_report() -> None:
    from monitor.reports._explain import explain

    results = _results("numeric", SPREAD, _num(np.arange(5.0)))
    assert {r.reason for r in results if r.method != "missing_rate"} == {
        "5 current rows < min_n 30"
    }
    assert all(r.to_dict()["reason"] == r.reason for r in results)
    assert explain(results[0], alpha=0.01, min_n=30) == (
        "insufficient data: 5 current rows < min_n 30; no verdict"
    )


def test_wasserstein_against_a_constant_reference_is_insufficient_data_not_ok() -> None:
    # Its sd is 0: every null draw is 0 and the distance has no unit. Before, a move from 3.0
    # to anywhere got p = 1 ("ok"); the default for such a column is per value (discrete).
    (w,) = [r for r in _results("numeric", _num([3.0] * N), SPREAD) if r.method == "wasserstein"]
    assert w.status == "insufficient_data" and w.reason is not None and "constant" in w.reason
    moved = _results("numeric", _num([3.0] * N), _num([3.5] * N))
    assert {r.method for r in moved if r.status == "drift"} >= {"jensen_shannon", "chi2", "ks"}


def test_a_value_arriving_in_bulk_that_the_reference_never_had_is_drift_for_every_method() -> None:
    results = _results("categorical", _cat(("a", N)), _cat(("a", 900), ("b", 100)))
    by = {r.method: r.status for r in results}
    assert all(s == "drift" for m, s in by.items() if m not in {"missing_rate", "l_infinity"})
    assert by["l_infinity"] == "ok"  # its value is exactly its threshold, 0.1: not above it
