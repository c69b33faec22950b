"""Migration 0023: waiting predictions and labels survive the upgrade and the downgrade (that
they join after the later upgrades: tests/test_migration_waiting_batches.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import column, select, table, text
from sqlalchemy.orm import Session

from migrations import downgrade, upgrade
from monitor.storage import make_engine
from monitor.storage.base import JSONDoc

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


AT = "0023_waiting_columns"
PENDING_PREDICTIONS = table(
    "pending_predictions",
    *(column(c) for c in ("request_id", "ts", "prediction_num", "prediction_text")),
    column("prediction", JSONDoc),
    column("slice_values"),
)
PENDING_LABELS = table(
    "pending_labels",
    *(column(c) for c in ("request_id", "ts", "label_num", "label_text")),
    column("label", JSONDoc),
)


def waiting(engine: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    preds_t, labels_t = PENDING_PREDICTIONS, PENDING_LABELS
    with Session(engine) as session:
        preds = session.execute(select(preds_t).order_by(preds_t.c.request_id)).all()
        labels = session.execute(select(labels_t).order_by(labels_t.c.request_id)).all()
    typed = [(*r[:5], orjson.loads(r[5])) for r in preds]
    return typed, [tuple(r) for r in labels]


def upgraded(database_url: str) -> Any:
    """An engine on a database seeded at 0022 and upgraded to 0023."""
    engine = make_engine(database_url)
    upgrade(engine, "0022_failure_windows")
    with engine.begin() as conn:
        seed(conn)
    upgrade(engine, AT)
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
    upgrade(engine, AT)
    assert waiting(engine) == (preds, labels)
    engine.dispose()
