"""The collector's estimation models are read again only when the model's baselines changed: one
stamp query every `REFRESH_S` for the whole cache, and a calibration stored while the collector
runs (a new baseline, a replaced one) is picked up at the next look."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlalchemy import event
from sqlalchemy.engine import Engine

from collectors._derived import REFRESH_S, Deriver
from monitor.baselines.store import save_baseline
from monitor.estimation import fit_calibration
from monitor.estimation._stored import SETTINGS_KEY, StoredEstimation
from monitor.profiles import profile_frame, specs_for


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _baseline(engine: Engine, model: str, calibrated: bool, version: str = "1") -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=200)})
    profiles = profile_frame(frame, specs_for(["x"], frame))
    settings = {}
    if calibrated:
        p = rng.beta(0.5, 0.5, 500)
        cal = fit_calibration(p, (rng.random(500) < p).astype(float), 0.5, 10)
        settings = {SETTINGS_KEY: StoredEstimation("prediction", "y", cal, {}).to_dict()}
    save_baseline(engine, model, version, profiles, replace=True, settings=settings)


def test_models_are_read_again_only_when_their_baselines_changed(sqlite_engine: Engine) -> None:
    clock = Clock()
    deriver = Deriver(sqlite_engine, clock=clock)
    _baseline(sqlite_engine, "plain", calibrated=False)
    assert deriver.models("plain", "1").empty and deriver.models("scored", "1").empty
    statements: list[str] = []
    event.listen(sqlite_engine, "before_cursor_execute", lambda *a: statements.append(a[2]))

    clock.t += REFRESH_S  # nothing changed: one stamp query, nothing read again
    assert deriver.models("plain", "1").empty and deriver.models("scored", "1").empty
    assert len(statements) == 1, statements

    _baseline(sqlite_engine, "scored", calibrated=True)  # created while the collector runs
    assert deriver.models("scored", "1").empty  # seen at the next look, not before
    clock.t += REFRESH_S
    assert deriver.models("scored", "1").estimation is not None
    assert deriver.models("plain", "1").empty

    _baseline(sqlite_engine, "scored", calibrated=False)  # replaced: its calibration is gone
    clock.t += REFRESH_S
    assert deriver.models("scored", "1").empty
    _baseline(sqlite_engine, "scored", calibrated=True, version="2")  # another version's
    clock.t += REFRESH_S  # version 1 compares with its own baseline: read again, still none
    assert deriver.models("scored", "1").empty
    assert deriver.models("scored", "2").estimation is not None
