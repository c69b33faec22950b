"""`modelwatch estimate CURRENT --baseline NAME --model M`: estimates from the calibration
stored with a baseline (`baseline create --score COL --label COL`, or `--score CLASS=COL` per
class), no reference file needed."""

from __future__ import annotations

from typing import Any

import numpy as np

from monitor.app.cli._common import engine_from_options
from monitor.app.cli._estimate_input import (
    ScoreColumns,
    read_binary,
    read_frame,
    read_multiclass,
    read_regression,
    sort_by_time,
)
from monitor.baselines.store import choose_baseline, list_baselines
from monitor.errors import InputError, NotFoundError
from monitor.estimation import (
    MULTICLASS_METRICS,
    REGRESSION_METRICS,
    BinaryData,
    Calibration,
    EstimateOptions,
    EstimationResult,
    MulticlassData,
    RegressionData,
    RegressionModel,
    StoredEstimation,
    StoredMulticlass,
    StoredRegression,
    estimate_binary,
    estimate_multiclass,
    estimate_regression,
    multivariate_drift,
    period_chunks,
    stored_calibration,
    stored_multivariate,
)
from monitor.reports.estimation import multivariate_dict


def with_baseline(
    current: str, prediction: str | None, slice_by: tuple[str, ...], how: EstimateOptions,
    opts: dict[str, Any], period: tuple[str | None, float | None] = (None, None),
) -> tuple[list[EstimationResult], dict[str, Any], dict[str, Any] | None]:  # fmt: skip
    """Results on CURRENT with the stored calibration and its reference-chunk thresholds, and
    the multivariate check when the baseline stores a model (`baseline create --features`)."""
    engine = engine_from_options(opts.get("database_url"), opts.get("config_path"))
    model, name = str(opts["model"]), str(opts["baseline_name"])
    version = opts.get("model_version") or _newest(engine, model, name)
    stored = stored_calibration(engine, model, version, name)
    if stored is None or choose_baseline(engine, model, version, name) is None:
        raise NotFoundError(
            f"baseline '{name}' of model '{model}' has no calibration: create it with "
            "`baseline create --score COL --label COL` (regression: `--task regression "
            "--prediction COL --label COL --features C,...`)"
        )
    if isinstance(stored, StoredRegression):
        prediction = prediction or stored.prediction
    frame = read_frame(current, _score_columns(stored), prediction, slice_by)
    periods = None
    if period[0] is not None and period[1] is not None and len(frame):
        frame, starts = sort_by_time(frame, period[0], period[1], current)
        periods = (tuple(period_chunks(starts)), ())
    if not len(frame):
        raise InputError(f"{current}: the current data is empty")
    metrics = (
        MULTICLASS_METRICS if isinstance(stored, StoredMulticlass)
        else REGRESSION_METRICS if isinstance(stored, StoredRegression) else how.metrics
    )  # fmt: skip
    fixed = EstimateOptions(how.chunk_size, metrics, how.min_n, stored.thresholds, periods,
                            stored.slice_thresholds)  # fmt: skip
    if isinstance(stored, StoredRegression):
        results, summary = _regression(current, frame, stored, (prediction, slice_by), fixed)
    elif isinstance(stored, StoredMulticlass):
        results, summary = _multiclass(current, frame, stored, (prediction, slice_by), fixed)
    else:
        results, summary = _binary(current, frame, stored, (prediction, slice_by), fixed)
    mv = _multivariate(engine, (model, version, name), frame, how.chunk_size, periods)
    return results, {**summary, "baseline": name}, mv


def _score_columns(
    stored: StoredEstimation | StoredMulticlass | StoredRegression,
) -> ScoreColumns:
    if isinstance(stored, StoredRegression):
        return ScoreColumns(())
    if isinstance(stored, StoredMulticlass):
        return ScoreColumns(stored.scores, stored.calibration.classes)
    return ScoreColumns((stored.score,))


def _binary(
    current: str, frame: Any, stored: StoredEstimation,
    columns: tuple[str | None, tuple[str, ...]], fixed: EstimateOptions,
) -> tuple[list[EstimationResult], dict[str, Any]]:  # fmt: skip
    c = stored.calibration
    cur = read_binary(current, frame, _score_columns(stored), stored.label, columns[0],
                      c.threshold, columns[1])  # fmt: skip
    none = BinaryData(np.empty(0), np.empty(0), None)
    return estimate_binary(c, none, cur, fixed), calibration_summary(c)


def _multiclass(
    current: str, frame: Any, stored: StoredMulticlass,
    columns: tuple[str | None, tuple[str, ...]], fixed: EstimateOptions,
) -> tuple[list[EstimationResult], dict[str, Any]]:  # fmt: skip
    c = stored.calibration
    cur = read_multiclass(current, frame, _score_columns(stored), stored.label, *columns)
    k = len(c.classes)
    none = MulticlassData(np.empty((0, k)), np.empty(0, dtype=np.intp), None)
    classes = {name: calibration_summary(m) for name, m in zip(c.classes, c.maps, strict=True)}
    return estimate_multiclass(c, none, cur, fixed), {"classes": classes}


def _regression(
    current: str, frame: Any, stored: StoredRegression,
    columns: tuple[str | None, tuple[str, ...]], fixed: EstimateOptions,
) -> tuple[list[EstimationResult], dict[str, Any]]:  # fmt: skip
    model = stored.model
    prediction = columns[0] or stored.prediction
    cur = read_regression(current, frame, model.features, prediction, stored.label, columns[1])
    none = RegressionData({f: np.empty(0) for f in model.features}, np.empty(0), None)
    return estimate_regression(model, none, cur, fixed), loss_summary(model)


def loss_summary(model: RegressionModel) -> dict[str, Any]:
    """The JSON `calibration` key of a regression model's loss models."""
    return {"task": "regression", "features": list(model.features),
            "categorical": sorted(model.categories), "reference_rows": model.rows,
            "reference_mae": model.absolute.mean,
            "reference_rmse": model.squared.mean**0.5}  # fmt: skip


def calibration_summary(c: Calibration) -> dict[str, Any]:
    """The JSON `calibration` key of one calibration map."""
    return {"bins": c.n_bins, "threshold": c.threshold, "raw_ece": c.raw_ece,
            "reference_rows": sum(c.counts)}  # fmt: skip


def _multivariate(
    engine: Any, which: tuple[str, str, str], frame: Any, chunk_size: int | None,
    periods: tuple[Any, Any] | None,
) -> dict[str, Any] | None:  # fmt: skip
    """The stored model's verdict on the whole of CURRENT and per chunk, against its bounds."""

    stored = stored_multivariate(engine, *which)
    if stored is None:
        return None
    m, bounds = stored.model, stored.bounds
    overall = multivariate_drift(m, None, frame, None, bounds=bounds)[0]
    chunked = chunk_size is not None or periods is not None
    chunks = multivariate_drift(m, None, frame, chunk_size, periods=periods,
                                bounds=bounds) if chunked else []  # fmt: skip
    return multivariate_dict(m, overall, chunks)


def _newest(engine: Any, model: str, name: str) -> str:

    for info in list_baselines(engine, model):
        if info.name == name:
            return str(info.version)
    raise NotFoundError(f"no baseline '{name}' for model '{model}'")
