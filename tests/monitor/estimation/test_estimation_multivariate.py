"""Multivariate drift by PCA reconstruction error: a broken correlation that no single column
shows is caught; missing values and unseen categories are handled as documented; clean chunks
alarm at the nominal rate (the fast version of bench/calibration_decisions.py's rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.calibration_decisions import failures, multivariate_rows
from monitor.errors import InputError
from monitor.estimation import fit_reconstruction, multivariate_drift, reconstruction_errors
from monitor.estimation._results import band_k


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


def _explicit_errors(model: object, frame: pd.DataFrame) -> np.ndarray:
    """The definition, step by step: impute, encode by reference share, standardise,
    project onto the kept components and back, distance."""
    from monitor.estimation import ReconstructionModel

    assert isinstance(model, ReconstructionModel)
    share_of = {c: dict(s) for c, s in zip(model.categorical, model.shares, strict=True)}
    cols = []
    for col, fill in zip(model.columns, model.fill, strict=True):
        if col in share_of:
            text = [str(fill) if pd.isna(v) else str(v) for v in frame[col]]
            cols.append([share_of[col].get(t, 0.0) for t in text])
        else:
            x = frame[col].astype(float).to_numpy()
            cols.append(np.where(np.isfinite(x), x, fill).tolist())
    z = (np.array(cols).T - np.array(model.mean)) / np.array(model.scale)
    v = np.array(model.components)
    return np.asarray(np.linalg.norm(z - z @ v.T @ v, axis=1))


def test_numpy_path_equals_the_definition_and_the_frame_path() -> None:
    ref = _frame(2000, 8)
    ref["d"] = np.where(np.arange(2000) % 3 == 0, True, False)
    model = fit_reconstruction(ref, ["a", "b", "c", "d"])
    cur = _frame(300, 9)
    cur["d"] = np.arange(300) % 2 == 0
    cur.loc[:5, "c"] = "never-seen"
    cur.loc[6:9, "c"] = None
    cur.loc[10:12, "a"] = np.nan
    cur.loc[13, "b"] = np.inf
    from_frame = reconstruction_errors(model, cur)
    arrays = {c: cur[c].to_numpy() for c in ["a", "b", "c", "d"]}
    assert from_frame == pytest.approx(_explicit_errors(model, cur), rel=1e-9, abs=1e-12)
    assert model.scorer.errors(arrays, len(cur)) == pytest.approx(from_frame, rel=1e-12)


def test_stored_model_round_trips_through_json_and_a_damaged_one_is_a_clear_error() -> None:
    import json

    from monitor.estimation import StoredMultivariate, fit_stored_multivariate

    ref = _frame(1000, 10)
    stored = fit_stored_multivariate(ref, ["a", "b", "c"])
    back = StoredMultivariate.from_dict(json.loads(json.dumps(stored.to_dict())), "baseline 'x'")
    assert back == stored and back.bounds[0] is not None and back.bounds[1] is not None
    cur = _frame(50, 11)
    assert reconstruction_errors(back.model, cur).tolist() == (
        reconstruction_errors(stored.model, cur).tolist()
    )
    with pytest.raises(InputError, match="baseline 'x': damaged multivariate model"):
        StoredMultivariate.from_dict({"model": {"columns": ["a"]}}, "baseline 'x'")


@pytest.mark.parametrize("chunks", [3, 10, 30])
def test_the_band_is_a_prediction_interval_at_the_nominal_tail(chunks: int) -> None:
    # Chunk means as the null makes them (independent, normal): a new one leaves the band of
    # `chunks` reference ones 0.27% of the time (the normal two-sided tail at 3 sd) whatever
    # their number; mean ± 3 std alone left it 2.4% of the time at 10 chunks.
    rng = np.random.default_rng(chunks)
    means = rng.normal(size=(100_000, chunks + 1))
    ref = means[:, :chunks]
    outside = np.abs(means[:, -1] - ref.mean(axis=1)) > band_k(chunks) * ref.std(axis=1)
    assert outside.mean() == pytest.approx(0.0027, abs=0.0006)


@pytest.mark.slow  # ~1 s: 10 fitted references, 200 chunks
def test_multivariate_drift_keeps_its_false_alarm_rate_and_finds_a_broken_correlation() -> None:
    null, power = multivariate_rows(chunk=100, chunks=10, reps=10)
    assert failures([null]) == []
    assert power.events / power.trials > 0.2
