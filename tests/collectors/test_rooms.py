"""Batch-grained waiting rooms (collectors/_rooms.py), on SQLite and PostgreSQL.

Several writers on one database (replicas: separate engines; two sources of one daemon; two
threads committing at once), a batch that fails after its join and is retried, a restarted
collector, colliding hashes, and the lifecycle of a batch row (taken entry by entry, deleted
when none is left, expired whole or in part, superseded from a later batch).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import timedelta

import numpy as np
import orjson
import pytest
from numpy.typing import NDArray
from sqlalchemy import func, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from collectors._rooms import WaitingRooms, _Keys, stable_hashes, waiting_entries
from monitor.config import CollectConfig, ModelConfig
from monitor.config._monitoring import OutcomeConfig
from monitor.storage import LabeledPrediction, OutcomeSummaryRow, make_engine
from tests.collectors.conftest import T0, event

MODELS = [ModelConfig(name="fraud", slices=["region"])]
# Text labels (told apart by value) are labels of a multiclass model only.
MULTICLASS = [
    ModelConfig(name="fraud", slices=["region"], outcomes=OutcomeConfig(task="multiclass"))
]
Within = Callable[[Session], None]


def prediction(i: int, ts: float | None = None, value: float | None = None) -> bytes:
    doc = event(i, ts)
    if value is not None:
        doc["prediction"] = value
    return orjson.dumps(doc)


def label(i: int, value: object = 1, ts: float | None = None) -> bytes:
    at = T0 + i if ts is None else ts
    return orjson.dumps({"request_id": f"r{i}", "model": "fraud", "label": value, "timestamp": at})


def ingestor(engine: Engine, source: str = "s", horizon_h: float = 24) -> Ingestor:
    cfg = CollectConfig(label_horizon=timedelta(hours=horizon_h))
    return Ingestor(engine, source, "kafka", MODELS, cfg)


class Feeder:
    """Feeds payloads to an Ingestor under one position key, offsets counting up."""

    def __init__(self, ing: Ingestor, key: str = "p") -> None:
        self.ing, self.key, self.next = ing, key, 0

    def __call__(
        self, payloads: Sequence[bytes], within: Callable[[Session], None] | None = None
    ) -> None:
        start = self.next
        records = [RawRecord(self.key, start + i, start + i + 1, p) for i, p in enumerate(payloads)]
        self.ing.ingest(records, within)
        self.next = start + len(payloads)


def pairs(engine: Engine) -> int:
    """Pairs counted in the overall outcome summaries."""
    with Session(engine) as session:
        overall = OutcomeSummaryRow.slice_key == ""
        return int(session.scalar(select(func.sum(OutcomeSummaryRow.n)).where(overall)) or 0)


def waiting(engine: Engine, room: str) -> list[str]:
    with Session(engine) as session:
        return [e.request_id for e in waiting_entries(session, "fraud", room)]


def batch_rows(engine: Engine) -> list[tuple[str, int, int]]:
    """(room, n, open) of each stored batch row, in id order."""
    with Session(engine) as session:
        sql = text("SELECT room, n, open FROM waiting_batches ORDER BY id")
        return [(r[0], r[1], r[2]) for r in session.execute(sql)]


def test_two_replicas_join_each_others_entries_both_ways(engine: Engine, database_url: str) -> None:
    other = make_engine(database_url)  # a second replica: its own engine and process state
    try:
        a, b = Feeder(ingestor(engine)), Feeder(ingestor(other), "q")
        a([prediction(i) for i in range(0, 50)])
        b([label(i) for i in range(0, 30)])  # B takes A's predictions
        b([prediction(i) for i in range(50, 100)])
        a([label(i) for i in range(30, 100)])  # A takes its own and B's predictions
        b([label(i) for i in range(100, 120)])
        a([prediction(i) for i in range(100, 120)])  # A takes B's labels
        assert pairs(engine) == 120
        assert waiting(engine, "prediction") == [] and waiting(engine, "label") == []
        assert batch_rows(engine) == []  # every row deleted once all its entries were taken
    finally:
        other.dispose()


def test_two_sources_of_one_process_join_each_others_entries(engine: Engine) -> None:
    # e.g. Kafka predictions and HTTP labels in one daemon: two Ingestors, one engine
    kafka, http = Feeder(ingestor(engine, "kafka")), Feeder(ingestor(engine, "http"))
    kafka([prediction(i) for i in range(40)])
    http([label(i) for i in range(20)])
    kafka([prediction(i) for i in range(40, 60)])
    http([label(i) for i in range(20, 60)])
    assert pairs(engine) == 60
    assert batch_rows(engine) == []


def test_two_threads_committing_at_once_count_each_pair_once(
    engine: Engine, database_url: str
) -> None:
    other = make_engine(database_url)
    try:
        preds, labels = Feeder(ingestor(engine)), Feeder(ingestor(other), "q")
        errors: list[BaseException] = []

        def run(feed: Feeder, make: Callable[[int], bytes]) -> None:
            try:
                for start in range(0, 400, 40):
                    feed([make(i) for i in range(start, start + 40)])
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [
            threading.Thread(target=run, args=(preds, prediction)),
            threading.Thread(target=run, args=(labels, label)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert pairs(engine) == 400
        assert waiting(engine, "prediction") == [] and waiting(engine, "label") == []
    finally:
        other.dispose()


def test_a_batch_failing_after_its_join_is_retried_and_counts_once(engine: Engine) -> None:
    feed = Feeder(ingestor(engine))
    feed([prediction(i) for i in range(10)])

    def fail(session: Session) -> None:
        raise RuntimeError("after the join")

    batch = [label(i) for i in range(6)] + [prediction(i) for i in range(10, 14)]
    with pytest.raises(RuntimeError):
        feed(batch, fail)  # took 6 stored predictions and stored 4 more, then rolled back
    feed(batch)  # the same offsets again: the failed batch wrote no positions
    assert pairs(engine) == 6
    assert waiting(engine, "prediction") == sorted(f"r{i}" for i in range(6, 14))
    # the index is right after the rollback: the rest join, in the old and the new rows
    feed([label(i) for i in range(6, 14)])
    assert pairs(engine) == 14
    assert batch_rows(engine) == []


def test_a_restarted_collector_joins_entries_stored_before(engine: Engine) -> None:
    Feeder(ingestor(engine))([prediction(i) for i in range(5)] + [label(9)])
    again = Feeder(ingestor(engine), "q")
    again([label(i) for i in range(5)] + [prediction(9)])
    assert pairs(engine) == 6
    assert batch_rows(engine) == []


def colliding(ids: Sequence[str]) -> NDArray[np.int64]:
    return np.zeros(len(ids), np.int64)  # every id has the same hash


def test_colliding_hashes_never_join_wrong_pairs(engine: Engine) -> None:
    cfg = CollectConfig(keep_joined_rows=True)
    ing = Ingestor(engine, "s", "kafka", MULTICLASS, cfg)
    ing._rooms = WaitingRooms(colliding)  # the process's index, hashing every id alike
    feed = Feeder(ing)
    feed([prediction(i, value=i / 10) for i in range(8)])
    feed([label(i, value=f"y{i}") for i in (5, 2, 7)] + [label(20)])
    with Session(engine) as session:
        cols = (LabeledPrediction.request_id, LabeledPrediction.prediction, LabeledPrediction.label)
        joined = sorted(tuple(r) for r in session.execute(select(*cols)))
    assert joined == [("r2", 0.2, "y2"), ("r5", 0.5, "y5"), ("r7", 0.7, "y7")]
    assert waiting(engine, "prediction") == [f"r{i}" for i in (0, 1, 3, 4, 6)]
    assert waiting(engine, "label") == ["r20"]


def test_empty_single_and_fully_taken_batches(engine: Engine) -> None:
    feed = Feeder(ingestor(engine))
    feed([])
    assert batch_rows(engine) == []
    feed([prediction(0)])
    assert batch_rows(engine) == [("prediction", 1, 1)]
    feed([prediction(i) for i in range(1, 4)])
    feed([label(1), label(2)])  # two of three taken: the row stays, one entry open
    assert batch_rows(engine) == [("prediction", 1, 1), ("prediction", 3, 1)]
    feed([label(0), label(3)])  # the rest: both rows deleted
    assert batch_rows(engine) == [] and pairs(engine) == 4


def test_expiry_deletes_whole_batches_and_part_of_a_batch_never_matches(engine: Engine) -> None:
    feed = Feeder(ingestor(engine, horizon_h=1))
    feed([prediction(0, ts=T0)])  # a batch all of whose entries expire
    feed([prediction(1, ts=T0 + 100), prediction(2, ts=T0 + 3000)])  # a batch partly expired
    feed([prediction(3, ts=T0 + 3800)])  # cutoff T0 + 200: the first batch row is deleted
    assert batch_rows(engine) == [("prediction", 2, 2), ("prediction", 1, 1)]
    feed([label(i, ts=T0 + 3800) for i in (1, 2)])  # r1 is past the horizon: its label waits
    assert pairs(engine) == 1
    assert waiting(engine, "label") == ["r1"]
    assert waiting(engine, "prediction") == ["r1", "r3"]


def test_a_later_batch_supersedes_an_entry_of_an_earlier_one(engine: Engine) -> None:
    cfg = CollectConfig(keep_joined_rows=True)
    feed = Feeder(Ingestor(engine, "s", "kafka", MULTICLASS, cfg))
    feed([prediction(0, value=0.1), prediction(1, value=0.2)])
    feed([prediction(0, value=0.9)])  # replaces r0's entry in the first batch row
    assert batch_rows(engine) == [("prediction", 2, 1), ("prediction", 1, 1)]
    with Session(engine) as session:
        stored = {e.request_id: e.value for e in waiting_entries(session, "fraud", "prediction")}
    assert stored == {"r0": 0.9, "r1": 0.2}
    feed([label(0, 1), label(9, "old")])
    feed([label(9, "new")])  # a label replaced by a later one of its id
    with Session(engine) as session:
        stored = {e.request_id: e.value for e in waiting_entries(session, "fraud", "label")}
        cols = (LabeledPrediction.request_id, LabeledPrediction.prediction, LabeledPrediction.label)
        joined = [tuple(r) for r in session.execute(select(*cols))]
    assert stored == {"r9": "new"}
    assert joined == [("r0", 0.9, 1)] and pairs(engine) == 1


def test_stable_hashes_do_not_depend_on_the_batch() -> None:
    ids = ["r1", "", "é\x1f", "a" * 300]
    alone = np.concatenate([stable_hashes([i]) for i in ids])
    np.testing.assert_array_equal(stable_hashes(ids), alone)
    assert len(set(stable_hashes([f"r{i}" for i in range(10_000)]).tolist())) == 10_000
    assert stable_hashes([]).shape == (0,)


def test_the_index_finds_every_live_entry_through_merges_and_drops() -> None:
    rng = np.random.default_rng(7)
    keys, live = _Keys(), {}
    for bid in range(1, 60):
        n = int(rng.integers(0, 300))
        hashes = rng.integers(0, 500, n).astype(np.int64)  # many repeats: collisions
        keys.add(hashes, bid, np.arange(n, dtype=np.int64))
        live[bid] = hashes
        if bid % 7 == 0:
            gone = [int(b) for b in rng.choice(list(live), 3, replace=False)]
            keys.drop(gone)
            for b in gone:
                del live[b]
    assert len(keys.runs) < 12  # runs merged as they come (O(log n) of them)
    needles = np.arange(0, 520, 3, dtype=np.int64)
    found = keys.find(needles)
    got = sorted(zip(*(a.tolist() for a in found), strict=True))
    want = sorted(
        (i, bid, pos)
        for bid, hashes in live.items()
        for pos, h in enumerate(hashes.tolist())
        for i in np.flatnonzero(needles == h).tolist()
    )
    assert got == want


def test_a_very_long_request_id_hashes_alone_and_alike() -> None:
    # Ids are hashed in groups of similar length: one long id must not pad the whole batch
    # to its length, and its hash (and every other id's) must not depend on the grouping.
    ids = [f"r{i}" for i in range(1_000)] + ["x" * 100_000, "y" * 70, "é" * 300, "z" * 129]
    alone = np.concatenate([stable_hashes([i]) for i in ids])
    np.testing.assert_array_equal(stable_hashes(ids), alone)
    assert len(set(stable_hashes(ids).tolist())) == len(ids)


def test_ids_hashed_one_at_a_time_hash_as_in_a_batch() -> None:
    # The same hash whichever path computes it: a batch of 20 ids of one length class goes
    # through numpy, a class of one id through Python integers.
    ids = ["a" * 100 + str(i) for i in range(20)] + ["b\0c" + "d" * 90, "\u2603" * 80 + "\0"]
    batch = stable_hashes([f"r{i}" for i in range(100)] + ids)[100:]
    alone = np.concatenate([stable_hashes([f"r{i}" for i in range(100)] + [i])[100:] for i in ids])
    np.testing.assert_array_equal(batch, alone)
