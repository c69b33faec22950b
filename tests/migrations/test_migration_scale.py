"""Migration 0011_scale moves a deployment over: pending drift windows and outcome summaries.

Rows are written at revision 0008 as the old code wrote them; after the upgrade the first tick
evaluates exactly the windows the old code had not evaluated yet, and outcome metrics come from
summaries rebuilt from the stored joined rows, equal to the raw computation.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert, select

from migrations import upgrade
from monitor.config import ModelConfig
from monitor.config._monitoring import OutcomeConfig
from monitor.evaluation.windows import WindowEvaluator, changed_windows
from monitor.outcomes import evaluate_outcomes
from monitor.storage import (
    DriftResultRow,
    LabeledPrediction,
    OutcomeResultRow,
    OutcomeSummaryRow,
    WindowProfile,
    make_engine,
    session_factory,
    transaction,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
MODEL = ModelConfig(
    name="fraud",
    slices=["region"],
    outcomes=OutcomeConfig(metrics=["accuracy", "recall", "log_loss"], min_support=1),
)


def _profile(h: int, updated: datetime) -> dict[str, Any]:
    start = T0 + h * HOUR
    return {
        "model": "fraud", "version": "1", "window_start": start, "window_end": start + HOUR,
        "slice_key": "", "column": "x", "kind": "numeric", "n": 1, "payload": b"p",
        "updated_at": updated,
    }  # fmt: skip


def _pair(i: int) -> dict[str, Any]:
    return {
        "model": "fraud", "request_id": f"r{i}", "version": "1",
        "ts": T0 + (i % 3) * HOUR + timedelta(seconds=i), "prediction": (i % 10) / 10,
        "label": int(i % 4 == 0), "slice_values": {"region": ["eu", "us"][i % 2]},
        "joined_at": T0,
    }  # fmt: skip


def _seed(url: str) -> None:
    engine = make_engine(url)
    upgrade(engine, "0008_thresholds")
    evaluated = T0 + 10 * HOUR
    with transaction(engine) as s:
        # Window 0 was evaluated after its last update, window 1 updated since, window 2 never.
        s.execute(insert(WindowProfile), [_profile(0, T0), _profile(1, T0 + 11 * HOUR)])
        s.execute(insert(WindowProfile), [_profile(2, T0)])
        for h in (0, 1):
            s.execute(
                insert(DriftResultRow).values(
                    model="fraud", version="1", window_start=T0 + h * HOUR,
                    window_end=T0 + (h + 1) * HOUR, slice_key="", column="x", method="psi",
                    value=0.0, threshold=0.1, p_value=None, n_reference=1, n_current=1,
                    status="ok", computed_at=evaluated,
                )
            )  # fmt: skip
        s.execute(insert(LabeledPrediction), [_pair(i) for i in range(90)])
    engine.dispose()


def test_upgrade_marks_unevaluated_windows_and_rebuilds_summaries(database_url: str) -> None:
    _seed(database_url)
    engine = make_engine(database_url)
    assert upgrade(engine).at_head
    assert [w.start for w in changed_windows(engine, "fraud")] == [T0 + HOUR, T0 + 2 * HOUR]
    WindowEvaluator(engine, [MODEL], 3600).run()
    with session_factory(engine)() as s:
        assert s.execute(select(OutcomeSummaryRow)).first() is not None
        stored = s.execute(select(OutcomeResultRow)).scalars().all()
    got = {(r.window_start, r.metric, r.slice_key): (r.value, r.n) for r in stored}
    assert len(got) == 3 * 3 * 3  # windows x metrics x (overall, eu, us)
    for h in range(3):
        pairs = [p for i in range(90) if (p := _pair(i))["ts"] < T0 + (h + 1) * HOUR]
        pairs = [p for p in pairs if p["ts"] >= T0 + h * HOUR]
        raw = evaluate_outcomes(
            [p["label"] for p in pairs],
            [p["prediction"] for p in pairs],
            slices={"region": [p["slice_values"]["region"] for p in pairs]},
            metrics=MODEL.outcomes.metrics,
            min_support=1,
        )
        for r in raw:
            key = "" if r.slice is None else f'{{"region":"{r.slice["region"]}"}}'
            value, n = got[(T0 + h * HOUR, r.metric, key)]
            assert n == r.n
            if r.value is None:
                assert value is None, (h, r.metric, key)
            else:
                assert abs(value - r.value) < 1e-12, (h, r.metric, key)
    # The backfill runs once.
    assert WindowEvaluator(engine, [MODEL], 3600).run() == []
    engine.dispose()
