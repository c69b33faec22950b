"""A window profiled on another spec than its baseline is moved onto the baseline's spec."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.detectors import evaluate
from monitor.detectors._respec import rebin
from monitor.profiles import ColumnSpec, ProfileSet
from monitor.profiles.numeric import NumericProfile
from tests.properties import examples


def _numeric(edges: tuple[float, ...], values: list[float]) -> NumericProfile:
    profile = ColumnSpec("x", "numeric", edges=edges).profile(np.asarray(values, dtype=float))
    assert isinstance(profile, NumericProfile)
    return profile


def test_same_spec_is_the_same_profile() -> None:
    p = _numeric((0.0, 1.0, 2.0), [0.5, 1.5])
    assert rebin(p, p.spec) is p


def test_shared_edges_keep_exact_counts() -> None:
    values = [0.1, 0.2, 1.1, 1.2, 1.3, 2.5, 3.5, -1.0]
    old = _numeric((0.0, 1.0, 2.0, 3.0), values)
    moved = rebin(old, ColumnSpec("x", "numeric", edges=(0.0, 2.0, 3.0)))
    assert moved is not None
    # underflow (-1), [0, 2): 5 values, [2, 3]: 1, overflow: 1 — the edges 0, 2, 3 are shared.
    assert moved.counts.tolist() == [1, 5, 1, 1]
    assert moved.null_count == old.null_count and moved.n == old.n


def test_kind_change_cannot_be_moved() -> None:
    old = _numeric((0.0, 1.0), [0.5])
    assert rebin(old, ColumnSpec("x", "categorical", categories=("a",))) is None


def test_categories_move_by_name() -> None:
    old = ColumnSpec("c", "categorical", categories=("a", "b")).profile(
        np.array(["a", "a", "b", None], dtype=object)
    )
    new = ColumnSpec("c", "categorical", categories=("b", "z"))
    moved = rebin(old, new)
    assert moved is not None
    # b -> b, a (unknown to the new spec) -> unseen; the null stays a null.
    assert moved.counts.tolist() == [1, 0, 0, 2] and moved.null_count == 1


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.floats(-100, 100), min_size=0, max_size=200),
    st.lists(st.floats(-50, 50), min_size=1, max_size=12),
)
def test_moving_keeps_every_value_and_stays_finite(values: list[float], edges: list[float]) -> None:
    old = _numeric((-10.0, 0.0, 10.0), values)
    moved = rebin(old, ColumnSpec("x", "numeric", edges=tuple(sorted(edges))))
    assert moved is not None
    assert moved.n == old.n and (moved.counts >= 0).all()
    assert np.isfinite(moved.sums).all()


def test_a_window_on_old_edges_is_compared_not_refused() -> None:
    rng = np.random.default_rng(1)
    reference = rng.normal(size=3000)
    current = rng.normal(size=3000)
    ref_spec = ColumnSpec(
        "x", "numeric", edges=tuple(np.quantile(reference, np.linspace(0, 1, 11)).tolist())
    )
    old_spec = ColumnSpec(
        "x", "numeric", edges=tuple(np.quantile(reference, np.linspace(0, 1, 7)).tolist())
    )
    ref = ProfileSet({("", "x"): ref_spec.profile(reference)}, {"": 3000}, (), {"x": ref_spec})
    cur = ProfileSet({("", "x"): old_spec.profile(current)}, {"": 3000}, (), {"x": old_spec})
    [result] = evaluate(ref, cur)
    assert result.status == "ok" and result.n_current == 3000
