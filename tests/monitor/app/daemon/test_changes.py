"""Change markers: ingest and the label join mark windows; evaluation consumes exactly those.

On SQLite and PostgreSQL. A tick evaluates what changed and nothing else; a change that lands
while its window is being evaluated, or an evaluation that crashes before consuming its marker,
is evaluated again, never lost; outcome metrics come from summaries that equal the raw rows.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.engine import Engine

from collectors import Ingestor, RawRecord
from monitor.config import CollectConfig, ModelConfig
from monitor.config._monitoring import OutcomeConfig
from monitor.evaluation.windows import WindowEvaluator, changed_windows, consume, labeled_windows
from monitor.outcomes import evaluate_outcomes
from monitor.outcomes.summary import score_of
from monitor.storage import LabeledPrediction, OutcomeResultRow, session_factory
from tests.collectors.conftest import T0, event

HOUR = 3600.0
MODEL = ModelConfig(
    name="fraud",
    slices=["region"],
    outcomes=OutcomeConfig(metrics=["accuracy", "precision", "recall", "f1"], min_support=1),
)


class Feed:
    def __init__(self, engine: Engine) -> None:
        self.ing = Ingestor(engine, "s", "http", [MODEL], CollectConfig(keep_joined_rows=True))
        self.offset = 0

    def __call__(self, *items: dict[str, Any]) -> None:
        records = []
        for item in items:
            records.append(RawRecord("s", self.offset, self.offset + 1, orjson.dumps(item)))
            self.offset += 1
        self.ing.ingest(records)


def label(i: int, value: object, ts: float) -> dict[str, Any]:
    return {"request_id": f"r{i}", "model": "fraud", "label": value, "timestamp": ts}


def starts(windows: list[Any]) -> list[datetime]:
    return [w.start for w in windows]


def hour(h: int) -> datetime:
    return datetime.fromtimestamp(T0 + h * HOUR, UTC)


def test_a_tick_evaluates_only_the_windows_that_changed(engine: Engine) -> None:
    feed = Feed(engine)
    for h in range(3):
        feed(*(event(h * 100 + i, ts=T0 + h * HOUR + i) for i in range(10)))
        feed(*(label(h * 100 + i, i % 2, T0 + h * HOUR + 20) for i in range(10)))
    assert starts(changed_windows(engine, "fraud")) == [hour(0), hour(1), hour(2)]
    assert starts(labeled_windows(engine, "fraud", HOUR)) == [hour(0), hour(1), hour(2)]
    evaluator = WindowEvaluator(engine, [MODEL], HOUR)
    assert {e.window.start for e in evaluator.run()} == {hour(0), hour(1), hour(2)}
    assert evaluator.run() == []  # idle: nothing changed
    # New traffic in window 1 only, and a late label for a request of window 0 only.
    feed(event(150, ts=T0 + HOUR + 50))
    assert starts(changed_windows(engine, "fraud")) == [hour(1)]
    assert labeled_windows(engine, "fraud", HOUR) == []
    feed(event(5000, ts=T0 + 2 * HOUR + 60), label(5000, 1, T0 + 2 * HOUR + 61))
    feed(label(3, 0, T0 + 2 * HOUR + 62))  # relabel of r3 is pending: r3 already joined
    assert starts(labeled_windows(engine, "fraud", HOUR)) == [hour(2)]
    assert [e.window.start for e in evaluator.run() if e.outcomes] == [hour(2)]
    assert evaluator.run() == []


def test_a_change_during_evaluation_or_a_crash_before_consuming_is_not_lost(
    engine: Engine,
) -> None:
    feed = Feed(engine)
    feed(event(1, ts=T0 + 1))
    read = changed_windows(engine, "fraud")
    assert len(read) == 1
    # Evaluation crashed before consuming: the window is still pending, with the same seq.
    assert changed_windows(engine, "fraud") == read
    # Ingest lands while the window is being evaluated; consuming the old read keeps it.
    feed(event(2, ts=T0 + 2))
    consume(engine, "drift", read)
    again = changed_windows(engine, "fraud")
    assert starts(again) == [hour(0)] and again[0].seq > read[0].seq
    consume(engine, "drift", again)
    assert changed_windows(engine, "fraud") == []
    # A stale consumer (an older read) cannot clear a newer change either.
    feed(event(3, ts=T0 + 3))
    consume(engine, "drift", read)
    assert starts(changed_windows(engine, "fraud")) == [hour(0)]


def _raw_results(engine: Engine) -> list[Any]:
    with session_factory(engine)() as s:
        rows = s.execute(select(LabeledPrediction)).scalars().all()
    ys, scores, regions = [], [], []
    for r in rows:
        y, score = score_of(r.label, None), score_of(r.prediction, None)
        if y is None or score is None or y not in (0.0, 1.0):
            continue
        ys.append(y)
        scores.append(score)
        regions.append(r.slice_values.get("region"))
    return evaluate_outcomes(
        ys, scores, slices={"region": regions}, metrics=MODEL.outcomes.metrics, min_support=1
    )


def test_outcome_results_from_summaries_equal_the_raw_rows(engine: Engine) -> None:
    feed = Feed(engine)
    feed(*(event(i, ts=T0 + i) for i in range(40)))
    feed(*(label(i, int(i % 3 == 0), T0 + 50) for i in range(40)))
    # r7 is sent again with a new prediction and label: it replaces the first pair, once.
    feed(event(7, ts=T0 + 7, prediction=0.95), label(7, 1, T0 + 60))
    # Unusable labels are skipped (not scored), without failing the batch or the window.
    feed(event(41, ts=T0 + 41), label(41, "fraud", T0 + 61))
    feed(event(42, ts=T0 + 42), label(42, 7, T0 + 61))
    WindowEvaluator(engine, [MODEL], HOUR).run()
    with session_factory(engine)() as s:
        stored = s.execute(select(OutcomeResultRow)).scalars().all()
    got = {(r.metric, r.slice_key): (r.value, r.n, r.ci_low, r.ci_high) for r in stored}
    want = {
        (r.metric, "" if r.slice is None else orjson.dumps(r.slice).decode()): (
            r.value,
            r.n,
            r.ci_low,
            r.ci_high,
        )
        for r in _raw_results(engine)
    }
    assert got.keys() == want.keys()
    for key, (value, n, lo, hi) in want.items():
        assert got[key][:2] == (value, n), key
        if key[0] != "f1":
            assert got[key][2:] == (lo, hi), key
    assert got[("accuracy", "")][1] == 40  # r7 counted once; r41 and r42 not scored


def test_windows_without_baseline_are_not_rescanned_every_tick(engine: Engine) -> None:
    feed = Feed(engine)
    feed(event(1, ts=T0 + 1))
    evaluator = WindowEvaluator(engine, [MODEL], HOUR)
    assert [e.drift for e in evaluator.run()] == []
    assert changed_windows(engine, "fraud") == []
    assert hour(1) - hour(0) == timedelta(hours=1)
