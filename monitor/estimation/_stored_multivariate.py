"""The multivariate drift model a baseline stores (`baseline create --features COLS`): the fitted
PCA reconstruction (imputation values, category shares, scaler, components) and the bounds of
the reference's chunk mean errors, kept in the baseline's settings under "multivariate"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from monitor.baselines.store import choose_baseline, stored_settings
from monitor.errors import InputError
from monitor.estimation._reconstruction import (
    DEFAULT_VARIANCE,
    ReconstructionModel,
    chunk_mean_bounds,
    fit_reconstruction,
    reconstruction_errors,
)
from monitor.estimation._results import REFERENCE_CHUNKS, chunk_bounds

MULTIVARIATE_KEY = "multivariate"


@dataclass(frozen=True)
class StoredMultivariate:
    """The fitted model and the reference-chunk bounds (None: fewer than 2 chunks)."""

    model: ReconstructionModel
    bounds: tuple[float | None, float | None]

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model.to_dict(), "threshold_low": self.bounds[0],
                "threshold_high": self.bounds[1]}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> StoredMultivariate:
        try:
            model = ReconstructionModel.from_dict(data["model"])
            low, high = data.get("threshold_low"), data.get("threshold_high")
            bounds = (None if low is None else float(low), None if high is None else float(high))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{where}: damaged multivariate model ({exc!r})") from None
        return cls(model, bounds)


def fit_stored_multivariate(
    frame: Any, features: Sequence[str], chunks: int = REFERENCE_CHUNKS,
    variance: float = DEFAULT_VARIANCE,
) -> StoredMultivariate:  # fmt: skip
    """Fit on the reference `frame` (pandas); bounds from `chunks` equal reference chunks, as
    the file-based run uses for the whole current data."""
    model = fit_reconstruction(frame, features, variance)
    errors = reconstruction_errors(model, frame)
    return StoredMultivariate(
        model, chunk_mean_bounds(errors, chunk_bounds(errors.size, None, max(chunks, 1)))
    )


def stored_multivariate(
    engine: Engine, model: str, version: str, name: str = "default"
) -> StoredMultivariate | None:
    """The multivariate model stored with the baseline model/version uses; None when none."""
    chosen = choose_baseline(engine, model, version, name)
    if chosen is None:
        return None
    data = stored_settings(engine, model, *chosen).get(MULTIVARIATE_KEY)
    where = f"baseline '{chosen[1]}' of model '{model}' version '{chosen[0]}'"
    return None if data is None else StoredMultivariate.from_dict(data, where)
