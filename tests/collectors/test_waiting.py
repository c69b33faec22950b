"""The label join's typed waiting rooms: a pair that waited counts as one that did not.

Each case feeds the same predictions and labels twice, on SQLite and PostgreSQL: once in one
batch (matched in memory) and once with the labels a batch later (the predictions wait in the
prediction room, a batch per row, numbers as float64 arrays), or the labels first (they wait
in the label room); the outcome summaries and the kept joined rows must agree.
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
from collectors._rooms import LABEL, WaitingRooms, decode_body, encode_body, waiting_entries
from migrations import upgrade
from monitor.config import CollectConfig, ModelConfig
from monitor.config._monitoring import OutcomeConfig
from monitor.outcomes.summary import pair_columns
from monitor.storage import (
    LabeledPrediction,
    OutcomeSummaryRow,
    make_engine,
)
from monitor.summaries import outcome_results
from tests.collectors.conftest import T0

# Quotes, braces, escapes, non-ASCII (control characters never pass the edge, collectors._edge).
ODD = 'eu"{}\\,:= é'


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


def test_waiting_entries_keep_times_values_and_slice_values(engine: Engine) -> None:
    cfg = ModelConfig(name="m", slices=["region"])
    run(engine, cfg, [[prediction(0, 0.7, ODD), prediction(1, "cat"), prediction(2, 7)]])
    with Session(engine) as session:
        entries = waiting_entries(session, "m", "prediction")
    got = [(e.request_id, e.version, e.ts, e.value, e.slice_values) for e in entries]
    assert got == [
        ("r0", "1", T0, 0.7, {"region": ODD}),
        ("r1", "1", T0 + 1, "cat", {"region": "eu"}),
        ("r2", "1", T0 + 2, 7.0, {"region": "eu"}),  # an int reads as its float
    ]


def test_a_repeated_request_id_replaces_every_column_of_the_waiting_entry(engine: Engine) -> None:
    # A batch of plain numbers sends no text or JSON column: replacing a stored entry of the
    # same id must still clear them, or the old value would come back with the label.
    oc = OutcomeConfig(task="multiclass", min_support=1)  # text labels are classes
    cfg = ModelConfig(name="m", slices=["region"], outcomes=oc)
    first = [prediction(0, "cat"), prediction(1, 0.4)]
    marks = [label(0, "not joined"), label(1, 1)]
    ing = Ingestor(engine, "s", "kafka", [cfg], CollectConfig(keep_joined_rows=True))
    ing.ingest([RawRecord("p", i, i + 1, p) for i, p in enumerate(first)])
    ing.ingest([RawRecord("p", 2, 3, prediction(0, 0.9)), RawRecord("p", 3, 4, label(2, "x"))])
    ing.ingest([RawRecord("p", 4, 5, label(2, 1))])
    with Session(engine) as session:
        got = [(e.request_id, e.value) for e in waiting_entries(session, "m", "prediction")]
        stored = [(e.request_id, e.value) for e in waiting_entries(session, "m", "label")]
    assert got == [("r0", 0.9), ("r1", 0.4)]
    # label r2 came as text, then as a number: the number replaced it
    assert stored == [("r2", 1.0)]
    ing.ingest([RawRecord("p", 5 + i, 6 + i, m) for i, m in enumerate(marks)])
    joined = outcome(engine, cfg)[2]
    assert [(r[0], r[1], r[2]) for r in joined] == [("r0", 0.9, "not joined"), ("r1", 0.4, 1)]


def test_an_empty_batch_and_all_pairs_in_batch_leave_the_rooms_empty(engine: Engine) -> None:
    cfg = ModelConfig(name="m", slices=["region"], outcomes=OutcomeConfig(min_support=1))
    run(engine, cfg, [[], [prediction(0, 0.7), label(0, 1)], []])
    with Session(engine) as session:
        assert waiting_entries(session, "m", "prediction") == []
        assert waiting_entries(session, "m", "label") == []
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
    ids = [f"r{i}" for i in range(len(values))]
    rooms = WaitingRooms()
    stamps = np.arange(len(values), dtype=np.int64)
    with Session(engine) as session:
        rooms.begin(session, "m")
        hashes = rooms.hasher(ids)
        rooms.wait(session, "m", LABEL, hashes, stamps, encode_body(ids, None, stamps, values, {}))
        rooms.commit()  # the index as if the batch had committed (the session then rolls back)
        taken = rooms.take(session, "m", LABEL, ids, hashes, 0)
        session.rollback()
    by_id = {
        ids[q]: v
        for body, query, at in taken.groups
        for q, v in zip(query, body.values(at), strict=True)
    }
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


def test_bodies_round_trip_values_and_slice_values() -> None:
    values = [math.nan, math.inf, 2**63 - 1, -(2**53) - 1, True, ODD, {"a": [1]}, None, 0.25, 3]
    slices: dict[str, list[Any]] = {
        "region": [ODD, None, "eu", 3, True, 1, "x", "y", "z", 2.5],
        "tier": list("abababaaab"),
    }
    ids = [f"r{i}" for i in range(len(values))]
    stamps = np.arange(len(values), dtype=np.int64) * 10**12
    body = decode_body(encode_body(ids, ["v"] * len(ids), stamps, values, slices))
    back = body.values(list(range(len(values))))
    assert math.isnan(back[0]) and back[1:4] == [math.inf, 2**63 - 1, -(2**53) - 1]
    assert back[4] is True and back[5:] == [ODD, {"a": [1]}, None, 0.25, 3.0]
    assert body.slices == slices and type(body.slices["region"][4]) is bool
    assert body.request_id == ids and body.version == ["v"] * len(ids)
    np.testing.assert_array_equal(body.ts, stamps)
    empty = decode_body(encode_body([], None, np.empty(0, np.int64), [], {}))
    assert empty.request_id == [] and empty.values([]) == []


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
        assert waiting_entries(session, "m", "prediction") == []
