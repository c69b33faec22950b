"""Migration 0024: waiting rows of 0023 become batch rows and back, and an entry that waited
before the upgrade is joined with its label after it (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import column, select, table, text
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from collectors._rooms import waiting_entries
from migrations import downgrade, upgrade
from monitor.config import CollectConfig, ModelConfig
from monitor.config._monitoring import OutcomeConfig
from monitor.storage import LabeledPrediction, make_engine
from monitor.storage.base import JSONDoc
from monitor.summaries import outcome_results

BEFORE = "0023_waiting_columns"
T0 = datetime(2026, 1, 1, 10, tzinfo=UTC)
US = int(T0.timestamp()) * 1_000_000
ODD = 'eu\x1f"{}\\ é'
# (model, request id, ts µs, num, text, JSON doc, slice values)
PREDICTIONS: list[tuple[str, str, int, Any, Any, Any, dict[str, Any]]] = [
    ("fraud", "p-float", US, 0.75, None, None, {"region": ODD}),
    ("fraud", "p-int", US + 1_000_000, 1.0, None, None, {"region": "us"}),
    ("fraud", "p-text", US + 2_000_000, None, "0.25", None, {}),
    ("fraud", "p-map", US + 3_000_000, None, None, {"score": 0.9}, {"region": "eu", "tier": 3}),
    ("fraud", "p-null", US + 4_000_000, None, None, None, {"region": None}),
    ("churn", "c-0", US, 0.5, None, None, {}),
]
LABELS: list[tuple[str, str, int, Any, Any, Any]] = [
    ("fraud", "l-int", US + 123_456, 1.0, None, None),
    ("fraud", "l-text", US + 123_456, None, "cat", None),
    ("fraud", "l-list", US + 123_456, None, None, [0, 1, 2**60]),
]
OLD_PREDICTIONS = table(
    "pending_predictions",
    *(column(c) for c in ("model", "request_id", "version", "ts", "prediction_num")),
    column("prediction_text"),
    column("prediction", JSONDoc),
    column("slice_values"),
)
OLD_LABELS = table(
    "pending_labels",
    *(column(c) for c in ("model", "request_id", "ts", "label_num", "label_text")),
    column("label", JSONDoc),
)


def seed(conn: Any) -> None:
    for model, rid, ts, num, txt, doc, values in PREDICTIONS:
        conn.execute(
            OLD_PREDICTIONS.insert().values(
                model=model, request_id=rid, version="1", ts=ts, prediction_num=num,
                prediction_text=txt, prediction=doc, slice_values=orjson.dumps(values).decode(),
            )
        )  # fmt: skip
    for model, rid, ts, num, txt, doc in LABELS:
        conn.execute(
            OLD_LABELS.insert().values(
                model=model, request_id=rid, ts=ts, label_num=num, label_text=txt, label=doc
            )
        )


def upgraded(database_url: str) -> Any:
    engine = make_engine(database_url)
    upgrade(engine, BEFORE)
    with engine.begin() as conn:
        seed(conn)
    upgrade(engine)
    return engine


def entries(engine: Any) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    with Session(engine) as session:
        for model, room in (("fraud", "prediction"), ("fraud", "label"), ("churn", "prediction")):
            out[f"{model}/{room}"] = [
                (e.request_id, e.version, e.ts, e.value, e.slice_values)
                for e in waiting_entries(session, model, room)
            ]
    return out


def present(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def test_waiting_rows_become_batch_rows_and_back(database_url: str) -> None:
    engine = upgraded(database_url)
    got = entries(engine)
    s = US / 1e6
    preds = [(p[1], "1", p[2] / 1e6, p[3] or p[4] or p[5], present(p[6])) for p in PREDICTIONS]
    fraud = sorted(p for p, m in zip(preds, PREDICTIONS, strict=True) if m[0] == "fraud")
    assert [(*e[:4], present(e[4])) for e in got["fraud/prediction"]] == fraud
    assert got["churn/prediction"] == [("c-0", "1", s, 0.5, {})]
    assert got["fraud/label"] == [
        ("l-int", "", s + 0.123456, 1.0, {}),
        ("l-list", "", s + 0.123456, [0, 1, 2**60], {}),
        ("l-text", "", s + 0.123456, "cat", {}),
    ]
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT model, room, n, open FROM waiting_batches")).all()
    # one batch row per (model, room)
    assert sorted(tuple(r) for r in rows) == [
        ("churn", "prediction", 1, 1), ("fraud", "label", 3, 3), ("fraud", "prediction", 5, 5)
    ]  # fmt: skip
    downgrade(engine, BEFORE)
    with engine.connect() as conn:
        back = conn.execute(select(OLD_PREDICTIONS).order_by(OLD_PREDICTIONS.c.request_id)).all()
        labels = conn.execute(select(OLD_LABELS).order_by(OLD_LABELS.c.request_id)).all()
    assert sorted(
        (r.model, r.request_id, r.ts, r.prediction_num, r.prediction_text, r.prediction,
         present(orjson.loads(r.slice_values)))
        for r in back
    ) == sorted((*p[:6], present(p[6])) for p in PREDICTIONS)  # fmt: skip
    assert sorted(tuple(r) for r in labels) == sorted(LABELS)
    upgrade(engine)
    assert entries(engine) == got
    engine.dispose()


def test_an_entry_waiting_before_the_upgrade_joins_after_it(database_url: str) -> None:
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
        left = [e.request_id for e in waiting_entries(session, "fraud", "prediction")]
    assert [tuple(r) for r in joined] == [("p-float", 0.75), ("p-int", 1.0), ("p-text", "0.25")]
    assert left == ["p-map", "p-null"]
    results = outcome_results(engine, cfg, "1", T0 - timedelta(hours=1), T0 + timedelta(hours=1))
    overall = {r.metric: r for r in results if r.slice is None}
    assert overall["accuracy"].n == 3 and overall["accuracy"].value == 2 / 3  # 0.25 < 0.5
    by_slice = {str(r.slice): r.n for r in results if r.metric == "accuracy"}
    assert by_slice[str({"region": ODD})] == 1
    # The taken entries do not come back on downgrade.
    downgrade(engine, BEFORE)
    with engine.connect() as conn:
        rids = conn.execute(select(OLD_PREDICTIONS.c.request_id)).scalars().all()
    assert sorted(rids) == ["c-0", "p-map", "p-null"]
    engine.dispose()
