"""Migration 0023: waiting predictions and labels survive the upgrade and the downgrade, and a
prediction that waited before the upgrade is joined with its label after it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import column, select, table, text
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from migrations import downgrade, upgrade
from monitor.config import CollectConfig, ModelConfig
from monitor.config._monitoring import OutcomeConfig
from monitor.storage import LabeledPrediction, PendingLabel, PendingPrediction, make_engine
from monitor.storage.base import JSONDoc
from monitor.summaries import outcome_results

T0 = datetime(2026, 1, 1, 10, tzinfo=UTC)
ODD = 'eu\x1f"{}\\ é'
PREDICTIONS: list[tuple[str, Any, dict[str, Any]]] = [  # (request id, prediction, slice values)
    ("p-float", 0.75, {"region": ODD}),
    ("p-int", 1, {"region": "us"}),
    ("p-text", "0.25", {}),
    ("p-map", {"score": 0.9}, {"region": "eu", "tier": 3}),
    ("p-null", None, {"region": None}),
]
DOCS = ("prediction", "slice_values")
LABELS: list[tuple[str, Any]] = [("l-int", 1), ("l-text", "cat"), ("l-list", [0, 1])]


def seed(conn: Any) -> None:
    for i, (rid, prediction, values) in enumerate(PREDICTIONS):
        conn.execute(
            text(
                "INSERT INTO pending_predictions (model, request_id, version, ts, prediction, "
                "slice_values) VALUES ('fraud', :r, '1', :t, :p, :s)"
            ),
            {"r": rid, "t": T0 + timedelta(seconds=i), "p": _json(prediction), "s": _json(values)},
        )
    for rid, value in LABELS:
        conn.execute(
            text(
                "INSERT INTO pending_labels (model, request_id, label, ts) "
                "VALUES ('fraud', :r, :l, :t)"
            ),
            {"r": rid, "l": _json(value), "t": T0 + timedelta(microseconds=123_456)},
        )


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def waiting(engine: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with Session(engine) as session:
        preds = session.execute(
            select(
                PendingPrediction.request_id,
                PendingPrediction.ts,
                PendingPrediction.prediction_num,
                PendingPrediction.prediction_text,
                PendingPrediction.prediction,
                PendingPrediction.slice_values,
            ).order_by(PendingPrediction.request_id)
        ).all()
        labels = session.execute(
            select(
                PendingLabel.request_id,
                PendingLabel.ts,
                PendingLabel.label_num,
                PendingLabel.label_text,
                PendingLabel.label,
            ).order_by(PendingLabel.request_id)
        ).all()
    typed = [(*r[:5], orjson.loads(r[5])) for r in preds]
    return typed, [tuple(r) for r in labels]


def upgraded(database_url: str) -> Any:
    """An engine on a database seeded at 0022 and upgraded to head."""
    engine = make_engine(database_url)
    upgrade(engine, "0022_failure_windows")
    with engine.begin() as conn:
        seed(conn)
    upgrade(engine)
    return engine


def test_waiting_rows_are_converted_both_ways(database_url: str) -> None:
    engine = upgraded(database_url)
    preds, labels = waiting(engine)
    us = int(T0.timestamp()) * 1_000_000
    assert preds == [
        ("p-float", us, 0.75, None, None, {"region": ODD}),
        ("p-int", us + 1_000_000, 1.0, None, None, {"region": "us"}),
        ("p-map", us + 3_000_000, None, None, {"score": 0.9}, {"region": "eu", "tier": 3}),
        ("p-null", us + 4_000_000, None, None, None, {"region": None}),
        ("p-text", us + 2_000_000, None, "0.25", None, {}),
    ]
    assert labels == [
        ("l-int", us + 123_456, 1.0, None, None),
        ("l-list", us + 123_456, None, None, [0, 1]),
        ("l-text", us + 123_456, None, "cat", None),
    ]
    downgrade(engine, "0022_failure_windows")
    old = table("pending_predictions", column("request_id"), *(column(c, JSONDoc) for c in DOCS))
    with engine.connect() as conn:
        rows = conn.execute(select(old)).all()
        stamps = conn.execute(text("SELECT count(*) FROM pending_labels")).scalar_one()
    back = {rid: (p, s) for rid, p, s in rows}
    assert back == {rid: (p, s) for rid, p, s in PREDICTIONS}  # 1 == 1.0: the int reads back
    assert stamps == len(LABELS)
    upgrade(engine)
    assert waiting(engine) == (preds, labels)
    engine.dispose()


def test_a_prediction_waiting_before_the_upgrade_joins_after_it(database_url: str) -> None:
    engine = upgraded(database_url)
    cfg = ModelConfig(name="fraud", slices=["region"], outcomes=OutcomeConfig(min_support=1))
    ing = Ingestor(engine, "s", "kafka", [cfg], CollectConfig(keep_joined_rows=True))
    at = T0.timestamp() + 5
    marks = [
        orjson.dumps({"request_id": rid, "model": "fraud", "label": 1, "timestamp": at})
        for rid in ("p-float", "p-int", "p-text")
    ]
    ing.ingest([RawRecord("p", i, i + 1, m) for i, m in enumerate(marks)])
    with Session(engine) as session:
        joined = session.execute(
            select(LabeledPrediction.request_id, LabeledPrediction.prediction).order_by(
                LabeledPrediction.request_id
            )
        ).all()
    assert [tuple(r) for r in joined] == [("p-float", 0.75), ("p-int", 1.0), ("p-text", "0.25")]
    results = outcome_results(engine, cfg, "1", T0 - timedelta(hours=1), T0 + timedelta(hours=1))
    overall = {r.metric: r for r in results if r.slice is None}
    assert overall["accuracy"].n == 3 and overall["accuracy"].value == 2 / 3  # 0.25 < 0.5
    by_slice = {str(r.slice): r.n for r in results if r.metric == "accuracy"}
    assert by_slice[str({"region": ODD})] == 1
    engine.dispose()
