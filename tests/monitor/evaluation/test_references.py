"""Decoded baselines kept across evaluation ticks: loaded once, checked against their stored row
every tick, so a replaced baseline is compared with at the next tick (SQLite may reuse a
deleted row's id: its created_at tells the rows apart)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from monitor.baselines.store import save_baseline
from monitor.config import ModelConfig
from monitor.evaluation.windows import WindowEvaluator
from monitor.profiles import profile_frame, specs_for
from monitor.storage import (
    BaselineProfile,
    DriftResultRow,
    mark_changed,
    session_factory,
    transaction,
)
from tests.monitor.detectors.test_thresholds import current_frame, reference_frame
from tests.monitor.evaluation.test_thresholds_wiring import START, _store_window

MODEL = ModelConfig(name="m")
SPAN = ("m", "1", START, START + timedelta(hours=1))


def _stable_value(engine: Engine) -> float:
    stmt = select(DriftResultRow.value).where(
        DriftResultRow.column == "stable", DriftResultRow.method == "wasserstein"
    )
    with session_factory(engine)() as s:
        return float(s.scalars(stmt).one())


def _changed(engine: Engine) -> None:
    with transaction(engine) as s:
        mark_changed(s, "drift", [SPAN])


def test_a_baseline_is_decoded_once_and_a_replaced_one_used_at_the_next_tick(
    engine: Engine,
) -> None:
    frame = reference_frame(2, 2000)
    specs = specs_for(list(frame.columns), frame)
    save_baseline(engine, "m", "1", profile_frame(frame, specs))
    _store_window(engine, "m", profile_frame(current_frame(11), specs))
    evaluator = WindowEvaluator(engine, [MODEL], 3600)
    evaluator.run()
    first = _stable_value(engine)
    _changed(engine)
    evaluator.run()
    assert evaluator.references.loads == 1 and _stable_value(engine) == first
    shifted = reference_frame(2, 2000).assign(stable=lambda f: f.stable + 3)
    save_baseline(engine, "m", "1", profile_frame(shifted, specs), replace=True)
    _changed(engine)
    evaluator.run()
    assert evaluator.references.loads == 2
    replaced = _stable_value(engine)
    assert replaced > first + 2
    _changed(engine)
    WindowEvaluator(engine, [MODEL], 3600).run()  # no cache: the same comparison
    assert _stable_value(engine) == replaced


def test_warming_decodes_each_configured_models_baselines_before_its_first_window(
    engine: Engine,
) -> None:
    frame = reference_frame(2, 500)
    specs = specs_for(list(frame.columns), frame)
    profiles = profile_frame(frame, specs)
    for model, version in (("m", "1"), ("m", "2"), ("other", "1")):  # `other`: not configured
        save_baseline(engine, model, version, profiles)
    save_baseline(engine, "m", "1", profiles, name="weekly")  # not the one `m` compares with
    evaluator = WindowEvaluator(engine, [MODEL], 3600, reference_cache=1)
    assert evaluator.warm() == 1  # newest first, up to the cache's size
    assert evaluator.references.loads == 1
    warmed = WindowEvaluator(engine, [MODEL], 3600)
    assert warmed.warm() == 2 and warmed.references.loads == 2
    _store_window(engine, "m", profile_frame(current_frame(11), specs))
    warmed.run()  # version 1's window: its baseline decoded already
    assert warmed.references.loads == 2
    assert _stable_value(engine) > 0


def test_a_baseline_that_cannot_be_decoded_leaves_the_others_warmed(engine: Engine) -> None:
    frame = reference_frame(2, 500)
    profiles = profile_frame(frame, specs_for(list(frame.columns), frame))
    ids = {version: save_baseline(engine, "m", version, profiles) for version in ("1", "2", "3")}
    with transaction(engine) as s:  # version 2's stored profiles garbled
        s.execute(
            update(BaselineProfile)
            .where(BaselineProfile.baseline_id == ids["2"])
            .values(payload=b"not a profile")
        )
    evaluator = WindowEvaluator(engine, [MODEL], 3600)
    assert evaluator.warm() == 2  # versions 3 and 1; 2 logged and skipped
    assert evaluator.references.loads == 2
