"""Label join: labels before or after predictions, horizon, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from collectors._rooms import waiting_entries
from monitor.config import CollectConfig, ModelConfig
from monitor.config._monitoring import OutcomeConfig
from monitor.storage import (
    LabeledPrediction,
    OutcomeSummaryRow,
    PendingHalf,
)
from monitor.summaries import outcome_results
from tests.collectors.conftest import T0, event

MODELS = [ModelConfig(name="fraud", slices=["region"])]


def label(i: int, value: object, ts: float) -> bytes:
    return orjson.dumps({"request_id": f"r{i}", "model": "fraud", "label": value, "timestamp": ts})


def feed(ing: Ingestor, payloads: list[bytes], first: int) -> None:
    ing.ingest([RawRecord("p", first + i, first + i + 1, p) for i, p in enumerate(payloads)])


def count(engine: Engine, table: type) -> int:
    with Session(engine) as session:
        return int(session.execute(select(func.count()).select_from(table)).scalar_one())


def test_labels_join_in_either_order_and_expire_after_horizon(engine: Engine) -> None:
    ing = Ingestor(
        engine,
        "s",
        "kafka",
        MODELS,
        CollectConfig(label_horizon=timedelta(hours=1), keep_joined_rows=True),
    )
    # r0: prediction then label (separate batches); r1: label first; r2: both in one batch;
    # r3: a label whose prediction never comes.
    feed(ing, [orjson.dumps(event(0)), label(1, 1, T0 + 5)], 0)
    feed(
        ing,
        [
            label(0, 0, T0 + 9),
            orjson.dumps(event(1)),
            orjson.dumps(event(2)),
            label(2, True, T0 + 9),
            label(3, 1, T0 + 9),
        ],
        2,
    )
    with Session(engine) as session:
        rows = session.execute(select(LabeledPrediction).order_by(LabeledPrediction.request_id))
        pairs = [
            (r.request_id, r.version, r.prediction, r.label, r.slice_values) for r in rows.scalars()
        ]
    assert pairs == [
        ("r0", "1", 0.0, 0, {"region": "eu"}),
        ("r1", "1", 0.1, 1, {"region": "us"}),
        ("r2", "1", 0.2, True, {"region": "eu"}),
    ]
    assert (len(stored_ids(engine, "prediction")), len(stored_ids(engine, "label"))) == (0, 1)
    # Two hours later in event time the unmatched label is past the horizon and goes away.
    feed(ing, [orjson.dumps(event(4, ts=T0 + 7200))], 7)
    assert (len(stored_ids(engine, "prediction")), len(stored_ids(engine, "label"))) == (1, 0)
    feed(ing, [label(3, 1, T0 + 7201)], 8)
    assert count(engine, LabeledPrediction) == 3  # r3's prediction never came


def cloudevent(pair_id: str, kind: str, data: object) -> bytes:
    return orjson.dumps(
        {
            "specversion": "1.0",
            "id": pair_id,
            "source": "kserve",
            "type": f"org.kubeflow.serving.inference.{kind}",
            "time": "2026-01-01T00:00:05Z",
            "inferenceservicename": "fraud",
            "data": data,
        }
    )


def test_cloudevent_halves_pair_across_batches_and_restarts(engine: Engine) -> None:
    options = {"feature_names": ["amount", "country"], "model_version": "7"}

    def make() -> Ingestor:
        return Ingestor(engine, "ce", "kafka", MODELS, format="cloudevents", format_options=options)

    req_a = cloudevent("a", "request", {"instances": [[10.0, "de"]]})
    resp_a = cloudevent("a", "response", {"predictions": [0.7]})
    req_b = cloudevent(
        "b",
        "request",
        {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [[1.5, 2.5]]}]},
    )
    resp_b = cloudevent(
        "b",
        "response",
        {"outputs": [{"name": "y", "shape": [1, 2], "datatype": "FP32", "data": [0.1, 0.9]}]},
    )
    first = make().ingest([RawRecord("p", 0, 1, req_a), RawRecord("p", 1, 2, resp_b)])
    assert first.events == 0 and first.dead_letters == 0  # both wait for their other half
    second = make().ingest(
        [
            RawRecord("p", 2, 3, resp_a),
            RawRecord("p", 3, 4, req_b),
            RawRecord("p", 4, 5, b'{"type": "x"}'),
        ]
    )
    assert (second.events, second.dead_letters) == (2, 1)
    with Session(engine) as session:
        entries = waiting_entries(session, "fraud", "prediction")
    assert [(e.request_id, e.version, e.value) for e in entries] == [
        ("a", "7", 0.7),
        ("b", "7", {"output": [0.1, 0.9]}),
    ]
    assert count(engine, PendingHalf) == 0


def test_without_keep_joined_rows_pairs_reach_only_the_summaries(engine: Engine) -> None:
    ing = Ingestor(engine, "s", "kafka", MODELS, CollectConfig())
    feed(ing, [orjson.dumps(event(i)) for i in range(3)] + [label(0, 1, T0 + 5)], 0)
    feed(ing, [label(1, 0, T0 + 6), label(2, 1, T0 + 7), label(9, 1, T0 + 8)], 4)
    assert count(engine, LabeledPrediction) == 0
    assert (len(stored_ids(engine, "prediction")), len(stored_ids(engine, "label"))) == (0, 1)
    with Session(engine) as session:
        rows = session.execute(select(OutcomeSummaryRow.slice_key, OutcomeSummaryRow.n)).all()
    # r0 joined within its batch, r1 and r2 against the waiting room; r9 still waits.
    assert sorted(rows) == [("", 3), ('{"region":"eu"}', 2), ('{"region":"us"}', 1)]
    cfg = ModelConfig(name="fraud", slices=["region"], outcomes=OutcomeConfig(min_support=1))
    start = datetime.fromtimestamp(T0, UTC)
    results = outcome_results(engine, cfg, "1", start, start + timedelta(hours=1))
    accuracy = next(r for r in results if r.metric == "accuracy" and r.slice is None)
    # predictions 0.0, 0.1, 0.2 at threshold 0.5 are all 0; labels 1, 0, 1
    assert (accuracy.n, accuracy.value) == (3, pytest.approx(1 / 3))


def stored_ids(engine: Engine, room: str) -> list[str]:
    """Request ids waiting in the fraud model's `room` ("prediction" or "label")."""
    with Session(engine) as session:
        return [e.request_id for e in waiting_entries(session, "fraud", room)]


def test_entries_past_the_horizon_never_match_and_go_once_the_cutoff_moves(
    engine: Engine,
) -> None:
    # Horizon 1h: old entries are deleted once the cutoff has moved by 1% of it (36 s).
    ing = Ingestor(engine, "s", "kafka", MODELS, CollectConfig(label_horizon=timedelta(hours=1)))
    feed(ing, [orjson.dumps(event(0)), orjson.dumps(event(1, ts=T0 + 3590))], 0)
    # The cutoff moves to T0 + 10, only 20 s on: r0 (at T0) stays stored but is past the
    # horizon, so its label does not match it and waits instead.
    feed(ing, [label(0, 1, T0 + 3610)], 2)
    assert stored_ids(engine, "prediction") == ["r0", "r1"]
    assert stored_ids(engine, "label") == ["r0"]
    assert count(engine, OutcomeSummaryRow) == 0
    # 90 s further (more than 36 s): old batches are deleted, but r0's prediction shares its
    # batch with r1, still in time: it stays stored (and never matches); its label is in time.
    feed(ing, [orjson.dumps(event(2, ts=T0 + 3700))], 3)
    assert stored_ids(engine, "prediction") == ["r0", "r1", "r2"]
    assert stored_ids(engine, "label") == ["r0"]
    # An old prediction (cutoff of its own batch far back) is stored; the next batch moves the
    # cutoff past it by only 20 s, yet a restarted collector deletes in its first batch.
    feed(ing, [orjson.dumps(event(3, ts=T0 + 110))], 4)
    again = Ingestor(engine, "s", "kafka", MODELS, CollectConfig(label_horizon=timedelta(hours=1)))
    feed(again, [label(9, 1, T0 + 3720)], 5)  # cutoff T0 + 120
    assert stored_ids(engine, "prediction") == ["r0", "r1", "r2"]
    assert stored_ids(engine, "label") == ["r0", "r9"]
    assert count(engine, OutcomeSummaryRow) == 0
