"""Direct loss estimation for regression: the estimate follows the realized loss within its band
when only the features move, a loss above the reference band is `degraded` (below it `drift`),
the stored loss models give the file-based run's values (the daemon's window profiles too), and
bad input is one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from monitor.errors import InputError
from monitor.estimation import (
    REGRESSION_METRICS,
    EstimateOptions,
    RegressionData,
    RegressionModel,
    StoredRegression,
    estimate_regression,
    fit_regression,
    fit_stored_regression,
    loss_values,
)
from monitor.estimation._window import StoredModels, window_rows
from monitor.profiles import ColumnSpec
from tests.conftest import run_cli

NOISE = {"calm": 1.0, "wild": 4.0}  # the error's spread per category of `kind`


def _frame(n: int, seed: int, wild_share: float = 0.2) -> pd.DataFrame:
    """y = 3·x + noise whose spread depends on `kind`; the model predicts 3·x."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, n)
    kind = np.where(rng.random(n) < wild_share, "wild", "calm")
    spread = np.vectorize(NOISE.get)(kind)
    return pd.DataFrame({"x": x, "kind": kind, "y_pred": 3 * x,
                         "y": 3 * x + rng.normal(0, 1, n) * spread})  # fmt: skip


def _data(frame: pd.DataFrame) -> RegressionData:
    labels = frame["y"].to_numpy(dtype=float) if "y" in frame else None
    return RegressionData({c: frame[c].to_numpy() for c in ("x", "kind")},
                          frame["y_pred"].to_numpy(dtype=float), labels)  # fmt: skip


def _fit(frame: pd.DataFrame) -> RegressionModel:
    d = _data(frame)
    assert d.labels is not None
    return fit_regression(d.columns, ["kind"], d.prediction, d.labels)


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    return _frame(4000, 1)


@pytest.fixture(scope="module")
def model(reference: pd.DataFrame) -> RegressionModel:
    return _fit(reference)


def test_estimate_follows_the_loss_when_the_mix_of_rows_changes(
    reference: pd.DataFrame, model: RegressionModel
) -> None:
    """More `wild` rows: the realized MAE and RMSE rise; the estimate follows inside its band
    and leaves the reference band upwards (`degraded`); fewer: below it (`drift`). Chunks of
    500 rows: 8 reference chunks (with 4 the prediction band, `band_k`, is ±12 std wide)."""
    how = EstimateOptions(500, REGRESSION_METRICS)
    for share, status in ((0.2, "ok"), (0.6, "degraded"), (0.0, "drift")):
        results = estimate_regression(model, _data(reference), _data(_frame(3000, 7, share)), how)
        assert len(results) == 18
        for r in results:
            assert r.ci_low is not None and r.ci_high is not None and r.realized is not None
            assert r.ci_low <= r.realized <= r.ci_high, r
            assert r.threshold_low is not None and r.threshold_high is not None
            assert r.status == status, r


def test_stored_model_round_trips_through_its_text_form(
    reference: pd.DataFrame, model: RegressionModel
) -> None:
    copy = RegressionModel.from_dict(json.loads(json.dumps(model.to_dict())), "test")
    current = _data(_frame(500, 3))
    assert np.array_equal(copy.losses(current.columns, current.prediction),
                          model.losses(current.columns, current.prediction))  # fmt: skip


def test_unseen_category_and_missing_values_are_estimated(model: RegressionModel) -> None:
    frame = _frame(200, 5)
    frame.loc[:9, "kind"] = "never"
    frame.loc[10:19, "kind"] = None
    frame.loc[20:29, "x"] = np.nan
    frame.loc[30:39, "y_pred"] = np.nan  # no prediction: left out of the estimate
    losses = model.losses(_data(frame).columns, _data(frame).prediction)
    assert np.isnan(losses[30:40]).all() and np.isfinite(np.delete(losses, range(30, 40), 0)).all()
    results = estimate_regression(model, _data(frame), _data(frame))
    assert {r.n for r in results} == {190}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.assign(y_pred=np.where(f.index == 3, np.inf, f.y_pred)), "infinite"),
        (lambda f: f.head(99), "at least 100"),
        (lambda f: f.assign(x=1.0, kind="a", y_pred=2.0), "constant"),
    ],
    ids=["infinite", "too-few", "constant"],
)
def test_bad_reference_is_one_line(change: Any, message: str) -> None:
    frame = change(_frame(300, 2))
    with pytest.raises(InputError, match=message):
        _fit(frame)


def test_without_lightgbm_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lightgbm", None)
    d = _data(_frame(300, 2))
    assert d.labels is not None
    with pytest.raises(InputError, match=r"modelwatch\[regression\]"):
        fit_regression(d.columns, ["kind"], d.prediction, d.labels)


def _write(tmp_path: Path, name: str, frame: pd.DataFrame) -> str:
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path)
    return str(path)


def test_cli_file_based_and_baseline_runs_agree(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    ref = _write(tmp_path, "ref", _frame(3000, 1))
    cur = _write(tmp_path, "cur", _frame(1500, 2, 0.6).drop(columns=["y"]))
    made = run_cli("baseline", "create", "--model", "m", "--version", "1", "--task",
                   "regression", "--prediction", "y_pred", "--label", "y", "--features",
                   "x,kind", "--database-url", db, ref)  # fmt: skip
    assert made.returncode == 0, made.stderr
    by_file = run_cli("estimate", ref, cur, "--task", "regression", "--prediction", "y_pred",
                      "--label", "y", "--features", "x,kind", "--chunk-size", "500",
                      "--json", "-")  # fmt: skip
    stored = run_cli("estimate", cur, "--baseline", "default", "--model", "m",
                     "--database-url", db, "--chunk-size", "500", "--json", "-")  # fmt: skip
    assert by_file.returncode == 0 and stored.returncode == 0, (by_file.stderr, stored.stderr)
    x, y = json.loads(by_file.stdout), json.loads(stored.stdout)
    assert x["calibration"]["task"] == y["calibration"]["task"] == "regression"
    assert [r["metric"] for r in x["results"]] == ["mae", "mse", "rmse"] * 3
    for rx, ry in zip(x["results"], y["results"], strict=True):
        assert rx["estimated"] == pytest.approx(ry["estimated"], rel=1e-12)
        assert rx["realized"] is None and rx["status"] == ry["status"] == "degraded"
        # the baseline's thresholds come from 10 equal chunks, the file's from 500-row chunks
        assert ry["threshold_high"] is not None and rx["threshold_high"] is not None


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    ref = _frame(300, 1)
    ref.loc[5, "y"] = np.inf
    args = ("estimate", _write(tmp_path, "ref", ref), _write(tmp_path, "cur", _frame(100, 2)),
            "--task", "regression", "--prediction", "y_pred", "--label", "y")  # fmt: skip
    out = run_cli(*args)
    assert out.returncode == 2 and "'y': infinite" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    usage = run_cli(*args, "--score", "y_pred")
    assert usage.returncode == 2 and "no --score" in usage.stderr
    leak = run_cli(*args, "--features", "x,y")
    assert leak.returncode == 2 and "'y' is the label column" in leak.stderr


def test_window_profiles_estimate_what_the_rows_do(reference: pd.DataFrame) -> None:
    """The daemon's path: each event's expected losses (`loss_values`), profiled in two batches
    and merged, give the window's rows (`window_rows`) equal to `estimate_regression` on the
    same rows with the baseline's thresholds; rows without a prediction count nowhere."""
    stored = fit_stored_regression([reference], ["x", "kind"], "y_pred", "y", chunks=10)
    current = _frame(900, 9, 0.6)
    current.loc[:4, "y_pred"] = np.nan
    data = _data(current)
    values = loss_values(stored.model, data.columns, data.prediction)
    profiles = {}
    for column, v in values.items():
        spec = ColumnSpec(column, "numeric", edges=(0.0, 1.0, 10.0, 100.0))
        profiles[("", column)] = spec.profile(v[:400]).merge(spec.profile(v[400:]))
    rows = window_rows(profiles, {}, StoredModels(stored, None), 30)
    how = EstimateOptions(None, REGRESSION_METRICS, thresholds=stored.thresholds)
    expected = estimate_regression(stored.model, _data(current.head(0)), data, how)
    assert [r.metric for r in rows] == list(REGRESSION_METRICS)
    for got, want in zip(rows, expected, strict=True):
        assert got.n == want.n == 895
        assert got.value == pytest.approx(want.estimated, rel=1e-12)
        assert (got.ci_low, got.ci_high) == pytest.approx((want.ci_low, want.ci_high), rel=1e-9)
        assert (got.threshold_low, got.threshold_high) == (want.threshold_low, want.threshold_high)
        assert got.status == want.status == "degraded"
    stored_again = StoredRegression.from_dict(json.loads(json.dumps(stored.to_dict())), "t")
    assert stored_again.thresholds == stored.thresholds


def test_a_stored_model_without_lightgbm_is_one_line(
    model: RegressionModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon reads a regression baseline without LightGBM; applying it is an InputError
    naming the extra (the collector logs it and profiles the window without the losses)."""
    copy = RegressionModel.from_dict(model.to_dict(), "test")
    monkeypatch.setitem(sys.modules, "lightgbm", None)
    d = _data(_frame(50, 4))
    with pytest.raises(InputError, match=r"needs LightGBM: pip install 'modelwatch\[regression\]'"):
        copy.losses(d.columns, d.prediction)
