"""Slice columns are columns: their own drift is reported overall, even where only the slices'
row counts know them (daemon windows slicing by an event attribute, older baselines)."""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd

from monitor.detectors import _slice_columns, evaluate
from monitor.profiles import profile_frame, specs_for


def _frame(seed: int, us_share: float, n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "amount": rng.normal(100, 20, n),
            "region": np.where(rng.uniform(size=n) < us_share, "us", "eu"),
        }
    )


def _sets(us_share: float, profiled: bool) -> tuple:
    ref, cur = _frame(1, 0.5), _frame(2, us_share)
    cols = ["amount", "region"] if profiled else ["amount"]
    specs = specs_for(cols, ref)
    return profile_frame(ref, specs, ["region"]), profile_frame(cur, specs, ["region"])


def test_slice_column_known_only_by_its_slices_is_compared() -> None:
    for profiled in (True, False):
        moved = evaluate(*_sets(0.9, profiled))
        region = [r for r in moved if r.column == "region"]
        assert [(r.slice, r.status, r.method) for r in region] == [
            (None, "drift", "jensen_shannon")
        ]
        assert region[0].n_reference == 3000 and region[0].n_current == 3000
        same = evaluate(*_sets(0.5, profiled))
        assert [r.status for r in same if r.column == "region"] == ["ok"]


def test_explicit_columns_still_include_the_slice_column() -> None:
    results = evaluate(*_sets(0.9, True), columns=["amount"])
    assert sorted({r.column for r in results}) == ["amount", "region"]
    assert all(r.slice is None for r in results if r.column == "region")


def test_slice_column_profile_from_counts_equals_the_profiled_one() -> None:
    from monitor.detectors._slice_columns import with_slice_columns

    profiled = _sets(0.7, True)
    derived = with_slice_columns(*_sets(0.7, False))
    for a, b in zip(profiled, derived, strict=True):
        assert a.get("region").counts.tolist() == b.get("region").counts.tolist()


def test_numeric_slice_column_known_only_by_its_slices() -> None:
    # A numeric slice column profiled in the reference but absent from the current side:
    # its slice values (strings) become numbers; "(null)" counts as null.
    ref = pd.DataFrame({"amount": np.arange(100.0), "tier": np.repeat([1, 2, 3, 4], 25)})
    cur = ref.assign(tier=np.repeat([1, 2, 3, 4], [70, 10, 10, 10]).astype(object))
    cur.loc[0, "tier"] = None
    ref_set = profile_frame(ref, specs_for(["amount", "tier"], ref), ["tier"])
    cur_set = profile_frame(cur, specs_for(["amount"], ref), ["tier"])
    (tier,) = [
        r for r in evaluate(ref_set, cur_set) if r.column == "tier" and r.method != "missing_rate"
    ]
    assert tier.kind == "numeric" and tier.status == "drift" and tier.n_current == 99


def test_reference_slice_column_computed_once_per_reference() -> None:
    """The reference's slice column (spec and profile from its slices) is kept per reference:
    later windows get the same results as the first, a new reference its own, and the kept
    entry goes with its reference."""
    ref, cur = _sets(0.9, profiled=False)
    first = evaluate(ref, cur)
    again = evaluate(ref, _sets(0.9, profiled=False)[1])
    assert first == again and any(r.column == "region" and r.status == "drift" for r in first)
    other = profile_frame(_frame(3, 0.9), specs_for(["amount"], _frame(3, 0.9)), ["region"])
    moved = [r for r in evaluate(other, cur) if r.column == "region"]
    assert moved and all(r.status == "ok" for r in moved)  # same mix: its own region profile
    kept = len(_slice_columns._REFERENCES)
    del ref, other
    gc.collect()
    assert len(_slice_columns._REFERENCES) == kept - 2
