"""Multivariate drift by PCA reconstruction error: a broken correlation that no single column
shows is caught; missing values and unseen categories are handled as documented."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from monitor.errors import InputError
from monitor.estimation import fit_reconstruction, multivariate_drift, reconstruction_errors


def _frame(n: int, seed: int, correlated: bool = True) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1, n)
    b = a + rng.normal(0, 0.2, n) if correlated else rng.normal(0, 1.02, n)
    return pd.DataFrame({"a": a, "b": b, "c": rng.choice(["x", "y"], n)})


def test_broken_correlation_drifts_while_each_column_keeps_its_distribution() -> None:
    ref = _frame(20_000, 1)
    model = fit_reconstruction(ref, ["a", "b", "c"])
    same = multivariate_drift(model, ref, _frame(5000, 2), chunk_size=2500)
    broken = multivariate_drift(model, ref, _frame(5000, 3, correlated=False), chunk_size=2500)
    assert [r.status for r in same] == ["ok", "ok"]
    assert [r.status for r in broken] == ["drift", "drift"]
    assert all(r.value is not None and r.threshold_high is not None and
               r.value > r.threshold_high for r in broken)  # fmt: skip


def test_missing_values_are_imputed_and_unseen_categories_encode_as_zero() -> None:
    ref = _frame(1000, 4)
    model = fit_reconstruction(ref, ["a", "b", "c"])
    cur = pd.DataFrame({"a": [np.nan, 0.0], "b": [0.0, np.nan], "c": ["never-seen", None]})
    errors = reconstruction_errors(model, cur)
    assert errors.shape == (2,) and np.isfinite(errors).all()


def test_constant_and_single_columns_and_tiny_chunks() -> None:
    ref = pd.DataFrame({"k": np.ones(100), "a": np.arange(100.0)})
    model = fit_reconstruction(ref, ["k", "a"])
    assert np.isfinite(reconstruction_errors(model, ref)).all()
    one = multivariate_drift(model, ref, ref.iloc[:1])
    assert one[0].status == "insufficient_data" and one[0].value is None and one[0].n == 1
    empty = multivariate_drift(model, ref, ref.iloc[:0])
    assert empty[0].status == "insufficient_data" and empty[0].n == 0


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="at least one feature"):
        fit_reconstruction(_frame(10, 5), [])
    model = fit_reconstruction(_frame(100, 6), ["a", "b"])
    with pytest.raises(InputError, match="column 'b' not found"):
        reconstruction_errors(model, pd.DataFrame({"a": [1.0]}))
