"""NannyML as the oracle for CBPE: on the datasets NannyML ships, per chunk our estimated ROC-AUC
and accuracy (multiclass: every metric, macro specificity included) are within 0.01 of NannyML's
CBPE, realized values (multiclass: equal to NannyML's) fall inside our band in at least 90% of
chunks (binary; multiclass wherever the data has no concept shift), and the same chunks fall
below the reference-derived threshold (NannyML's widened to a prediction interval, `band_k`:
except chunks between the two); multivariate drift (PCA reconstruction error) takes
the values of NannyML's DataReconstructionDriftCalculator and alerts on the same chunks (its
band NannyML's widened to a prediction interval, `band_k`);
regression DLE on the car price data: MAE, MSE and RMSE within 1% of NannyML's DLE per chunk."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from monitor.estimation import (
    MULTICLASS_METRICS,
    REGRESSION_METRICS,
    BinaryData,
    EstimateOptions,
    EstimationResult,
    MulticlassData,
    RegressionData,
    estimate_binary,
    estimate_multiclass,
    estimate_regression,
    fit_calibration,
    fit_multiclass,
    fit_reconstruction,
    fit_regression,
    multivariate_drift,
)
from monitor.estimation._metrics import widening
from monitor.estimation._results import THRESHOLD_K, band_k, chunk_bounds

pytestmark = pytest.mark.nannyml
CHUNK = 5000
METRICS = ("roc_auc", "accuracy")


@pytest.fixture(scope="module")
def nml() -> Any:
    """NannyML (the dev extra), imported when a test here runs (~6 s of CPU), not at collection.

    It phones home on import unless told not to; a missing NannyML fails the run, never skips.
    """
    os.environ["NML_DISABLE_USAGE_LOGGING"] = "1"
    return importlib.import_module("nannyml")


def _loader(nml: Any, dataset: str) -> Callable[[], Any]:
    loader: Callable[[], Any] = getattr(nml, f"load_synthetic_{dataset}_dataset")
    return loader


BINARY = [
    ("car_loan", "car_loan", "repaid"),
    ("binary", "binary_classification", "work_home_actual"),
]


def _binary(frame: Any, target: str) -> BinaryData:
    return BinaryData(
        frame["y_pred_proba"].to_numpy(dtype=float),
        frame["y_pred"].to_numpy(dtype=float),
        frame[target].to_numpy(dtype=float),
    )


@pytest.mark.parametrize(("name", "dataset", "target"), BINARY, ids=["car_loan", "binary"])
def test_binary_cbpe_matches_nannyml_per_chunk(
    nml: Any, name: str, dataset: str, target: str
) -> None:
    reference, analysis, targets = _loader(nml, dataset)()
    analysis = analysis.merge(targets, on="id")
    oracle = nml.CBPE(
        y_pred_proba="y_pred_proba", y_pred="y_pred", y_true=target, metrics=list(METRICS),
        chunk_size=CHUNK, problem_type="classification_binary",
    )  # fmt: skip
    oracle.fit(reference)
    theirs = oracle.estimate(analysis).filter(period="analysis").to_df()

    ref = _binary(reference, target)
    assert ref.labels is not None
    calibration = fit_calibration(ref.scores, ref.labels)
    ours = estimate_binary(
        calibration, ref, _binary(analysis, target), EstimateOptions(CHUNK, METRICS)
    )
    for metric in METRICS:
        rows = [r for r in ours if r.metric == metric]
        assert len(rows) == len(theirs) == 10
        estimated = np.array([r.estimated for r in rows], dtype=float)
        expected = theirs[(metric, "value")].to_numpy(dtype=float)
        assert np.abs(estimated - expected).max() <= 0.01, (name, metric, estimated, expected)
        inside = [_inside(r) for r in rows]
        assert len(inside) == 10 and sum(inside) >= 9, (name, metric)
        _same_alerts(rows, theirs, metric, len(chunk_bounds(len(reference), CHUNK)))
    # accuracy: the same 5 alerts as NannyML; ROC-AUC's drop (5 alerts there) lies between
    # NannyML's threshold and our wider one (10 reference chunks: band_k 4.53 std)
    assert any(r.status == "degraded" for r in ours), name


def _widened(theirs: Any, metric: str, m: int) -> tuple[float, float]:
    """NannyML's thresholds (mean ± 3 population std of m reference chunks) widened as ours:
    the same centre, band_k(m) std instead of 3; the low end clipped at 0."""
    low, high = (float(theirs[(metric, b)].iloc[0]) for b in ("lower_threshold", "upper_threshold"))
    centre, half = (high + low) / 2, (high - low) / 2 * band_k(m) / THRESHOLD_K
    return max(0.0, centre - half), centre + half


def _same_alerts(rows: list[EstimationResult], theirs: Any, metric: str, m: int) -> None:
    """Our thresholds are NannyML's widened for `m` reference chunks (`_widened`); our alerts
    (status not `ok`) are NannyML's, except chunks between its thresholds and ours; and NannyML
    has at least one (the comparison is not vacuous)."""
    low, high = (float(theirs[(metric, b)].iloc[0]) for b in ("lower_threshold", "upper_threshold"))
    alerts = theirs[(metric, "alert")].to_numpy(dtype=bool).tolist()
    for r, alert in zip(rows, alerts, strict=True):
        assert r.estimated is not None
        ours_low = r.threshold_low if r.threshold_low is not None else -np.inf
        ours_high = r.threshold_high if r.threshold_high is not None else np.inf
        between = high < r.estimated <= ours_high or ours_low <= r.estimated < low
        assert (r.status != "ok") == alert or (alert and between), (metric, r)
    assert any(alerts), metric
    low, high = _widened(theirs, metric, m)
    assert rows[0].threshold_low == pytest.approx(low, rel=1e-6, abs=1e-12), metric
    if rows[0].threshold_high is not None:
        assert rows[0].threshold_high == pytest.approx(high, rel=1e-6), metric


def _inside(r: EstimationResult) -> bool:
    assert r.ci_low is not None and r.ci_high is not None and r.realized is not None
    return r.ci_low <= r.realized <= r.ci_high


def _multiclass(frame: Any, classes: list[str]) -> MulticlassData:
    index = {c: i for i, c in enumerate(classes)}
    return MulticlassData(
        frame[[f"y_pred_proba_{c}" for c in classes]].to_numpy(dtype=float),
        frame["y_pred"].map(index).to_numpy(dtype=np.intp),
        frame["y_true"].map(index).to_numpy(dtype=np.intp),
    )


def test_multiclass_cbpe_matches_nannyml_per_chunk(nml: Any) -> None:
    """The dataset's second half carries concept shift (the label given the scores changes):
    no estimate from scores alone can follow it, NannyML's band misses it as ours does, and
    the first half — where estimation's assumption holds — is inside the band."""
    reference, analysis, targets = nml.load_synthetic_multiclass_classification_dataset()
    analysis = analysis.merge(targets, on="id")
    classes = ["highstreet_card", "prepaid_card", "upmarket_card"]
    oracle = nml.CBPE(
        y_pred_proba={c: f"y_pred_proba_{c}" for c in classes}, y_pred="y_pred", y_true="y_true",
        metrics=list(MULTICLASS_METRICS), chunk_size=6000,
        problem_type="classification_multiclass",
    )  # fmt: skip
    oracle.fit(reference)
    theirs = oracle.estimate(analysis).filter(period="analysis").to_df()

    ref = _multiclass(reference, classes)
    assert ref.labels is not None
    calibration = fit_multiclass(classes, ref.scores, ref.labels)
    ours = estimate_multiclass(
        calibration, ref, _multiclass(analysis, classes), EstimateOptions(6000, MULTICLASS_METRICS)
    )
    for metric in MULTICLASS_METRICS:
        rows = [r for r in ours if r.metric == metric]
        assert [r.realized for r in rows] == pytest.approx(
            theirs[(metric, "realized")].to_numpy(dtype=float).tolist(), abs=1e-12
        ), metric
        estimated = np.array([r.estimated for r in rows], dtype=float)
        expected = theirs[(metric, "value")].to_numpy(dtype=float)
        assert len(rows) == 10 and np.abs(estimated - expected).max() <= 0.01, (metric, estimated)
        realized = np.array([r.realized for r in rows], dtype=float)
        in_theirs = (realized >= theirs[(metric, "lower_confidence_boundary")].to_numpy()) & (
            realized <= theirs[(metric, "upper_confidence_boundary")].to_numpy()
        )
        assert [_inside(r) for r in rows] == in_theirs.tolist() == [True] * 5 + [False] * 5
        _same_alerts(rows, theirs, metric, len(chunk_bounds(len(reference), 6000)))


MULTIVARIATE = [
    ("car_loan", ["car_value", "salary_range", "debt_to_income_ratio",
     "loan_length", "repaid_loan_on_prev_car", "size_of_downpayment", "driver_tenure"]),
    ("binary_classification", ["distance_from_office", "salary_range",
     "gas_price_per_litre", "public_transportation_cost", "wfh_prev_workday", "workday", "tenure"]),
    ("multiclass_classification", ["acq_channel", "app_behavioral_score",
     "requested_credit_limit", "app_channel", "credit_bureau_score", "stated_income",
     "is_customer"]),
]  # fmt: skip


@pytest.mark.parametrize(("dataset", "features"), MULTIVARIATE, ids=["car_loan", "binary", "mc"])
def test_multivariate_drift_alerts_on_the_chunks_nannyml_does(
    nml: Any, dataset: str, features: list[str]
) -> None:
    reference, analysis, _ = _loader(nml, dataset)()
    oracle = nml.DataReconstructionDriftCalculator(column_names=features, chunk_size=CHUNK)
    theirs = oracle.fit(reference).calculate(analysis).filter(period="analysis").to_df()
    model = fit_reconstruction(reference, features)
    ours = multivariate_drift(model, reference, analysis, CHUNK)
    values = np.array([r.value for r in ours], dtype=float)
    expected = theirs[("reconstruction_error", "value")].to_numpy(dtype=float)
    assert values == pytest.approx(expected, rel=1e-6)
    alerts = theirs[("reconstruction_error", "alert")].to_numpy(dtype=bool).tolist()
    low, high = (
        theirs[("reconstruction_error", b)].iloc[0] for b in ("lower_threshold", "upper_threshold")
    )
    # The same alerts, except chunks between NannyML's band and our wider one (mc: one chunk
    # before the drift starts, 1.2834 against its 1.2799 and our 1.2879).
    for r, alert in zip(ours, alerts, strict=True):
        assert r.value is not None and r.threshold_high is not None
        floor = r.threshold_low if r.threshold_low is not None else -np.inf
        between = high < r.value <= r.threshold_high or floor <= r.value < low
        assert (r.status == "drift") == alert or (alert and between)
    assert any(r.status == "drift" for r in ours)
    # NannyML's band is mean ± 3 std of the reference chunks; ours the same centre and std,
    # widened to a prediction interval for one more chunk (band_k std instead of 3).
    m = len(chunk_bounds(len(reference), CHUNK))
    widened = (high + low) / 2 + (high - low) / 2 * band_k(m) / THRESHOLD_K
    assert ours[0].threshold_high == pytest.approx(widened, rel=1e-6)


CAR_PRICE_FEATURES = ["car_age", "km_driven", "price_new", "accident_count", "door_count",
                      "fuel", "transmission"]  # fmt: skip
LOSS_TOLERANCE = 0.01  # relative: |ours − NannyML's| ≤ 1% of NannyML's estimate per chunk


def _regression(frame: Any) -> RegressionData:
    labels = frame["y_true"].to_numpy(dtype=float) if "y_true" in frame else None
    return RegressionData({c: frame[c].to_numpy() for c in CAR_PRICE_FEATURES},
                          frame["y_pred"].to_numpy(dtype=float), labels)  # fmt: skip


def test_regression_dle_matches_nannyml_per_chunk(nml: Any) -> None:
    """DLE on NannyML's synthetic car price data, chunks of 6,000 rows: estimated MAE and RMSE
    (and MSE) within 1% of NannyML's per chunk (a loss is in the label's units, car prices
    here, so an absolute 0.01 means nothing; measured: equal to float precision, the same
    LightGBM model), NannyML's sampling errors, the realized values, and the same chunks
    outside the reference band (the loss falls in the second half: `drift`, not `degraded`)."""
    reference, analysis, targets = nml.load_synthetic_car_price_dataset()
    analysis = analysis.merge(targets, on="id")
    oracle = nml.DLE(feature_column_names=CAR_PRICE_FEATURES, y_pred="y_pred", y_true="y_true",
                     metrics=list(REGRESSION_METRICS), chunk_size=6000)  # fmt: skip
    oracle.fit(reference)
    theirs = oracle.estimate(analysis).filter(period="analysis").to_df()

    ref = _regression(reference)
    assert ref.labels is not None
    model = fit_regression(ref.columns, ["fuel", "transmission"], ref.prediction, ref.labels)
    ours = estimate_regression(model, ref, _regression(analysis),
                               EstimateOptions(6000, REGRESSION_METRICS))  # fmt: skip
    for metric in REGRESSION_METRICS:
        rows = [r for r in ours if r.metric == metric]
        expected = theirs[(metric, "value")].to_numpy(dtype=float)
        estimated = np.array([r.estimated for r in rows], dtype=float)
        assert len(rows) == 10
        assert (np.abs(estimated - expected) / expected).max() <= LOSS_TOLERANCE, metric
        # Our band: ±3 of NannyML's sampling error, widened by sqrt(1 + chunk / reference).
        wider = np.array([widening(r.n, model.rows) for r in rows])
        se = np.array([(r.ci_high or 0.0) - (r.estimated or 0.0) for r in rows]) / 3 / wider
        assert se == pytest.approx(theirs[(metric, "sampling_error")].to_numpy(), rel=1e-9)
        assert [r.realized for r in rows] == pytest.approx(
            theirs[(metric, "realized")].to_numpy(dtype=float).tolist(), rel=1e-12
        )
        # NannyML's band: mean ± 3 std (population) of the reference chunks; ours the same
        # widened to a prediction interval for one more chunk (band_k std)
        _same_alerts(rows, theirs, metric, len(chunk_bounds(len(reference), 6000)))
        assert [r.status for r in rows] == ["ok"] * 5 + ["drift"] * 5
        assert sum(_inside(r) for r in rows) >= 9
