"""`modelwatch estimate CURRENT --baseline NAME --model M`: estimates from the calibration
stored with a baseline (`baseline create --score COL --label COL`), no reference file needed."""

from __future__ import annotations

from typing import Any

import numpy as np

from monitor.baselines import choose_baseline, list_baselines
from monitor.cli._common import engine_from_options
from monitor.cli._estimate_input import ScoreColumns, read_binary, read_frame, sort_by_time
from monitor.errors import InputError, NotFoundError
from monitor.estimation import (
    BinaryData,
    EstimateOptions,
    EstimationResult,
    estimate_binary,
    multivariate_drift,
    period_chunks,
    stored_estimation,
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
    stored = stored_estimation(engine, model, version, name)
    if stored is None or choose_baseline(engine, model, version, name) is None:
        raise NotFoundError(
            f"baseline '{name}' of model '{model}' has no calibration: create it with "
            "`baseline create --score COL --label COL`"
        )
    scores = ScoreColumns((stored.score,))
    frame = read_frame(current, scores, prediction, slice_by)
    periods = None
    if period[0] is not None and period[1] is not None and len(frame):
        frame, starts = sort_by_time(frame, period[0], period[1], current)
        periods = (tuple(period_chunks(starts)), ())
    cur = read_binary(current, frame, scores, stored.label, prediction,
                      stored.calibration.threshold, slice_by)  # fmt: skip
    if not cur.scores.size:
        raise InputError(f"{current}: the current data is empty")
    none = BinaryData(np.empty(0), np.empty(0), None)
    fixed = EstimateOptions(how.chunk_size, how.metrics, how.min_n, stored.thresholds, periods,
                            stored.slice_thresholds)  # fmt: skip
    results = estimate_binary(stored.calibration, none, cur, fixed)
    c = stored.calibration
    mv = _multivariate(engine, (model, version, name), frame, how.chunk_size, periods)
    return results, {"bins": c.n_bins, "threshold": c.threshold, "raw_ece": c.raw_ece,
                     "reference_rows": sum(c.counts), "baseline": name}, mv  # fmt: skip


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
