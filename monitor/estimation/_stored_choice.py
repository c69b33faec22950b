"""Which stored estimation a model version uses: binary, multiclass or regression.

Apart from `_stored` and `_stored_regression` because it reads all three kinds and the
regression kind builds on `_stored`'s helpers.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from monitor.baselines.store import choose_baseline, stored_settings
from monitor.estimation._stored import SETTINGS_KEY, StoredEstimation, StoredMulticlass
from monitor.estimation._stored_regression import TASK, StoredRegression


def stored_calibration(
    engine: Engine, model: str, version: str, name: str = "default"
) -> StoredEstimation | StoredMulticlass | StoredRegression | None:
    """The calibration (binary or multiclass) or the loss models (regression) stored with the
    baseline model/version uses; None when it has none."""
    chosen = choose_baseline(engine, model, version, name)
    if chosen is None:
        return None
    data = stored_settings(engine, model, *chosen).get(SETTINGS_KEY)
    where = f"baseline '{chosen[1]}' of model '{model}' version '{chosen[0]}'"
    if data is None:
        return None
    if data.get("task") == TASK:
        return StoredRegression.from_dict(data, where)
    if "classes" in data:
        return StoredMulticlass.from_dict(data, where)
    return StoredEstimation.from_dict(data, where)
