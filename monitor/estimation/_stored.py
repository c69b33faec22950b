"""The calibration a baseline stores (`baseline create --score COL --label COL`): fitted on the
reference in one extra pass over its score and label columns, kept in the baseline's settings
under "estimation" with the reference-chunk lower thresholds of each metric."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine

from monitor.baselines import choose_baseline, stored_settings
from monitor.errors import InputError
from monitor.estimation._calibration import DEFAULT_BINS, Calibration, fit_calibration
from monitor.estimation._metrics import METRICS
from monitor.estimation._realized import realized
from monitor.estimation._results import REFERENCE_CHUNKS, chunk_bounds, lower_threshold

SETTINGS_KEY = "estimation"


@dataclass(frozen=True)
class StoredEstimation:
    """A baseline's calibration, the columns it was fitted on and the lower threshold of each
    metric from the reference's chunks (None: too few chunks)."""

    score: str
    label: str
    calibration: Calibration
    thresholds: dict[str, float | None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "label": self.label,
            "calibration": self.calibration.to_dict(),
            "thresholds": self.thresholds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> StoredEstimation:
        cal = Calibration.from_dict(data.get("calibration", {}), where)
        thresholds = {str(k): None if v is None else float(v)
                      for k, v in dict(data.get("thresholds", {})).items()}  # fmt: skip
        return cls(str(data.get("score")), str(data.get("label")), cal, thresholds)


def fit_stored(
    batches: Iterable[Any], score: str, label: str, threshold: float = 0.5,
    bins: int = DEFAULT_BINS, chunks: int = REFERENCE_CHUNKS,
) -> StoredEstimation:  # fmt: skip
    """Calibrate on the score and label columns of reference `batches` (pandas frames)."""
    parts = [(_floats(b, score), _floats(b, label)) for b in batches]
    s = np.concatenate([p[0] for p in parts]) if parts else np.empty(0)
    y = np.concatenate([p[1] for p in parts]) if parts else np.empty(0)
    calibration = fit_calibration(s, y, threshold, bins)
    pred = (s >= threshold).astype(np.float64)
    values: dict[str, list[float]] = {m: [] for m in METRICS}
    for c in chunk_bounds(s.size, None, max(chunks, 1)):
        for m in METRICS:
            got = realized(m, y[c.start : c.end], s[c.start : c.end], pred[c.start : c.end])
            values[m].append(np.nan if got is None else got)
    thresholds = {m: lower_threshold(np.asarray(v, dtype=np.float64)) for m, v in values.items()}
    return StoredEstimation(score, label, calibration, thresholds)


def stored_estimation(
    engine: Engine, model: str, version: str, name: str = "default"
) -> StoredEstimation | None:
    """The calibration stored with the baseline model/version uses; None when it has none."""
    chosen = choose_baseline(engine, model, version, name)
    if chosen is None:
        return None
    settings = stored_settings(engine, model, *chosen)
    data = settings.get(SETTINGS_KEY)
    where = f"baseline '{chosen[1]}' of model '{model}' version '{chosen[0]}'"
    return None if data is None else StoredEstimation.from_dict(data, where)


def _floats(frame: Any, column: str) -> Any:
    import pandas as pd

    values = pd.to_numeric(frame[column], errors="coerce")
    if (values.isna() & frame[column].notna()).any():
        raise InputError(
            f"column '{column}': not a number: {frame[column][values.isna()].iloc[0]!r}"
        )
    return values.to_numpy(dtype=np.float64, na_value=np.nan)
