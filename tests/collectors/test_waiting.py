"""The label join's typed waiting rooms: a pair that waited counts as one that did not.

Each case feeds the same predictions and labels twice, on SQLite and PostgreSQL: once in one
batch (matched in memory) and once with the labels a batch later (the predictions wait in
`pending_predictions`, stored without JSON where they can be), or the labels first (they wait
in `pending_labels`); the outcome summaries and the kept joined rows must agree.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import orjson
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from collectors import _bulk as bulk
from collectors import _waiting as waiting
from migrations import upgrade
from monitor.config import CollectConfig, ModelConfig
from monitor.config._monitoring import OutcomeConfig
from monitor.outcomes.summary import pair_columns
from monitor.storage import (
    LabeledPrediction,
    OutcomeSummaryRow,
    PendingLabel,
    PendingPrediction,
    make_engine,
)
from monitor.summaries import outcome_results
from tests.collectors.conftest import T0

ODD = 'eu\x1f\x1e"{}\\,:= é\n\t'  # separators, quotes, braces, escapes, non-ASCII


def prediction(i: int, value: Any, region: Any = "eu") -> bytes:
    doc = {
        "request_id": f"r{i}",
        "model": "m",
        "model_version": "1",
        "timestamp": T0 + i,
        "features": {"amount": float(i)},
        "prediction": value,
        "metadata": {} if region is None else {"region": region},
    }
    return orjson.dumps(doc)


def label(i: int, value: Any) -> bytes:
    return orjson.dumps({"request_id": f"r{i}", "model": "m", "label": value, "timestamp": T0 + i})


def run(engine: Engine, cfg: ModelConfig, batches: list[list[bytes]]) -> None:
    ing = Ingestor(engine, "s", "kafka", [cfg], CollectConfig(keep_joined_rows=True))
    offset = 0
    for batch in batches:
        ing.ingest([RawRecord("p", offset + i, offset + i + 1, p) for i, p in enumerate(batch)])
        offset += len(batch)


def outcome(engine: Engine, cfg: ModelConfig) -> tuple[list[Any], list[Any], list[Any]]:
    """(summary rows, metrics, joined rows) as a user sees them."""
    with Session(engine) as session:
        summaries = sorted(
            session.execute(select(OutcomeSummaryRow.slice_key, OutcomeSummaryRow.n))
        )
        joined = sorted(
            (r.request_id, r.prediction, r.label, r.slice_values)
            for r in session.execute(select(LabeledPrediction)).scalars()
        )
    start = datetime.fromtimestamp(T0, UTC)
    results = outcome_results(engine, cfg, "1", start, start + timedelta(hours=1))
    metrics = sorted(
        (str(r.slice), r.metric, None if r.value is None else round(r.value, 9), r.n)
        for r in results
    )
    return summaries, metrics, joined


def fresh(request: pytest.FixtureRequest, database_url: str, name: str) -> Engine:
    """A second, migrated database on the backend of `database_url`."""
    if database_url.startswith("sqlite"):
        url = database_url.replace("modelwatch.db", f"{name}.db")
    else:
        url = request.getfixturevalue("postgres").create_database()
    engine = make_engine(url)
    upgrade(engine)
    return engine


CASES: dict[str, tuple[OutcomeConfig, list[Any], list[Any], list[Any]]] = {
    # (outcomes, predictions, labels, region of each prediction)
    "binary": (
        OutcomeConfig(min_support=1),
        [0.7, "no score", "0.9", {"score": 0.2}, 1, True, 2**60, [0.1, 0.8], 0.3],
        [1, 0, 1, 0, 1, 1, 0, 1, 0],
        [ODD, None, "us", 3, True, ODD, "eu", "", "us"],
    ),
    "multiclass": (
        OutcomeConfig(task="multiclass", min_support=1),
        ["cat", "dog", 2, {"cat": 0.9, "dog": 0.1}, None, "", 2.0, [0.2, 0.8]],
        ["cat", "cat", "2", "cat", "dog", "dog", 2, "1"],
        ["eu", ODD, "us", "eu", None, "us", "eu", "us"],
    ),
    "regression": (
        OutcomeConfig(task="regression", min_support=1),
        [1.5, -2, None, "3.25", 0, 2**62 + 1, {"y": 4.0}],
        [1.0, -2.5, 3.0, 3.0, 0.5, 1e20, 4.5],
        ["eu", "us", ODD, "eu", None, "us", "eu"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_pairs_that_waited_count_as_pairs_that_did_not(
    request: pytest.FixtureRequest, database_url: str, case: str
) -> None:
    oc, preds, labels, regions = CASES[case]
    cfg = ModelConfig(name="m", slices=["region"], outcomes=oc)
    events = [prediction(i, p, r) for i, (p, r) in enumerate(zip(preds, regions, strict=True))]
    marks = [label(i, v) for i, v in enumerate(labels)]
    got = []
    for name, batches in (
        ("together", [events + marks]),
        ("labels_later", [events, marks]),
        ("labels_first", [marks, events]),
    ):
        engine = fresh(request, database_url, f"{case}_{name}")
        run(engine, cfg, batches)
        got.append(outcome(engine, cfg))
        engine.dispose()
    together, later, first = got
    # predictions the event format rejects (maps, lists, booleans, null) are dead letters
    assert len(together[2]) == sum(type(p) in (int, float, str) for p in preds)
    assert later == together
    assert first == together


def test_waiting_rows_hold_typed_values(engine: Engine) -> None:
    cfg = ModelConfig(name="m", slices=["region"])
    run(engine, cfg, [[prediction(0, 0.7, ODD), prediction(1, "cat"), prediction(2, 7)]])
    with Session(engine) as session:
        rows = session.execute(select(PendingPrediction).order_by(PendingPrediction.request_id))
        got = [
            (r.ts, r.prediction_num, r.prediction_text, r.prediction, orjson.loads(r.slice_values))
            for r in rows.scalars()
        ]
    us = int(T0 * 1_000_000)
    assert got == [
        (us, 0.7, None, None, {"region": ODD}),
        (us + 1_000_000, None, "cat", None, {"region": "eu"}),
        (us + 2_000_000, 7.0, None, None, {"region": "eu"}),  # an int reads as its float
    ]


def test_a_repeated_request_id_replaces_every_column_of_the_waiting_entry(engine: Engine) -> None:
    # A batch of plain numbers sends no text or JSON column: replacing a stored entry of the
    # same id must still clear them, or the old value would come back with the label.
    cfg = ModelConfig(name="m", slices=["region"], outcomes=OutcomeConfig(min_support=1))
    first = [prediction(0, "cat"), prediction(1, 0.4)]
    marks = [label(0, "not joined"), label(1, 1)]
    ing = Ingestor(engine, "s", "kafka", [cfg], CollectConfig(keep_joined_rows=True))
    ing.ingest([RawRecord("p", i, i + 1, p) for i, p in enumerate(first)])
    ing.ingest([RawRecord("p", 2, 3, prediction(0, 0.9)), RawRecord("p", 3, 4, label(2, "x"))])
    ing.ingest([RawRecord("p", 4, 5, label(2, 1))])
    with Session(engine) as session:
        rows = session.execute(select(PendingPrediction).order_by(PendingPrediction.request_id))
        got = [(r.request_id, r.prediction_num, r.prediction_text) for r in rows.scalars()]
        stored = session.execute(
            select(
                PendingLabel.request_id, PendingLabel.label_num, PendingLabel.label_text
            ).order_by(PendingLabel.request_id)
        ).all()
    assert got == [("r0", 0.9, None), ("r1", 0.4, None)]
    # label r2 came as text, then as a number: the number replaced it entirely
    assert [tuple(r) for r in stored] == [("r2", 1.0, None)]
    ing.ingest([RawRecord("p", 5 + i, 6 + i, m) for i, m in enumerate(marks)])
    joined = outcome(engine, cfg)[2]
    assert [(r[0], r[1], r[2]) for r in joined] == [("r0", 0.9, "not joined"), ("r1", 0.4, 1)]


def test_an_empty_batch_and_all_pairs_in_batch_leave_the_rooms_empty(engine: Engine) -> None:
    cfg = ModelConfig(name="m", slices=["region"], outcomes=OutcomeConfig(min_support=1))
    run(engine, cfg, [[], [prediction(0, 0.7), label(0, 1)], []])
    with Session(engine) as session:
        waiting_rows = session.execute(select(PendingPrediction)).all()
    assert waiting_rows == []
    assert outcome(engine, cfg)[0][0] == ("", 1)


@pytest.mark.parametrize(
    "values",
    [
        [],
        [math.nan, math.inf, -math.inf, 0.5, None],
        [0, 1, 1, 0, 2**53, -3],  # whole numbers only
        [1, 2.5, -(2**53) - 1],  # one beyond 2**53 keeps them all exact
        [1, -(2**53), 2**53 + 1, True, "x", "", {"a": [1]}, None, 0.25],
    ],
)
def test_values_round_trip_through_the_database(engine: Engine, values: list[Any]) -> None:
    """What metrics read of a stored value equals what they read of the value itself."""
    with Session(engine) as session:
        num, txt, doc = waiting.split_values(values)
        ids = [f"r{i}" for i in range(len(values))]
        rows = [("m", *row) for row in zip(ids, [0] * len(ids), num, txt, doc, strict=True)]
        columns = ("model", "request_id", "ts", "label_num", "label_text", "label")
        bulk.upsert(session, "pending_labels", columns, ("model", "request_id"), rows)
        taken = bulk.take(session, "pending_labels", "m", ids, columns[1:], {"label"})
        session.rollback()
    by_id = {rid: waiting.join_values([n], [t], [d])[0] for rid, _, n, t, d in taken}
    assert len(by_id) == len(values)
    back = [by_id[rid] for rid in ids]
    for task in ("classification", "regression", "multiclass"):
        y0, s0 = pair_columns(values, values, task, None)
        y1, s1 = pair_columns(back, back, task, None)
        if task == "multiclass":
            assert list(y1) == list(y0) and list(s1) == list(s0)
        else:
            np.testing.assert_array_equal(y1, y0)
            np.testing.assert_array_equal(s1, s0)


def test_slice_texts_round_trip() -> None:
    columns: dict[str, list[Any]] = {
        "region": [ODD, None, "eu", 3, True, 1],
        "tier": ["a", "b", "a", "a", "b", "b"],
    }
    texts = waiting.slice_texts(columns, [0, 1, 2, 3, 4, 5])
    back = waiting.slice_columns(texts, ["region", "tier", "added_later"])
    assert back["region"] == [ODD, None, "eu", 3, True, 1]
    assert type(back["region"][4]) is bool and type(back["region"][5]) is int
    assert back["tier"] == columns["tier"]
    assert back["added_later"] == [None] * 6
    assert waiting.slice_texts(columns, []) == [] and waiting.slice_columns([], ["x"]) == {"x": []}
    assert waiting.slice_texts({}, [0, 1]) == ["{}", "{}"]


def test_request_ids_with_odd_characters_join_across_batches(engine: Engine) -> None:
    cfg = ModelConfig(name="m", slices=["region"], outcomes=OutcomeConfig(min_support=1))
    ids = ['a"b', "c\\d", "e,f", "{g}", "h i", "NULL", "", 'j\\"k', ODD]
    events = [
        orjson.dumps(
            {"request_id": rid, "model": "m", "model_version": "1", "timestamp": T0 + i,
             "features": {"amount": 1.0}, "prediction": 0.9, "metadata": {"region": "eu"}}
        )
        for i, rid in enumerate(ids)
    ]  # fmt: skip
    marks = [
        orjson.dumps({"request_id": rid, "model": "m", "label": 1, "timestamp": T0 + 9})
        for rid in ids
    ]
    run(engine, cfg, [events[:5] + marks[5:], marks[:5] + events[5:]])
    joined = outcome(engine, cfg)[2]
    accepted = sorted(r[0] for r in joined)
    assert accepted == sorted(i for i in ids if i)  # an empty request id is a dead letter
    with Session(engine) as session:
        assert session.execute(select(PendingPrediction)).all() == []
