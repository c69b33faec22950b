"""The Ingestor contract on SQLite and PostgreSQL: exactly-once, dead letters, windows, profiles."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import orjson
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

import collectors._store as store
from collectors import Batch, Ingestor, RawRecord
from migrations import upgrade
from monitor.config import CollectConfig, ModelConfig
from monitor.errors import ConfigError, RegistryError
from monitor.profiles import profile_from_bytes
from monitor.storage import DeadLetter, SourcePosition, WindowCount, WindowProfile, make_engine
from tests.collectors.conftest import T0, aggregated, counters, event

MODELS = [ModelConfig(name="fraud", slices=["region"])]


def records(events: list[bytes], key: str = "p0", first: int = 0) -> list[RawRecord]:
    return [RawRecord(key, first + i, first + i + 1, p) for i, p in enumerate(events)]


def make(engine: Engine, **settings: object) -> Ingestor:
    return Ingestor(engine, "src", "kafka", MODELS, CollectConfig(**settings))  # type: ignore[arg-type]


def test_replayed_records_are_applied_once(engine: Engine) -> None:
    data = records([orjson.dumps(event(i)) for i in range(300)])
    ing = make(engine)
    assert ing.ingest(data[:200]).events == 200
    # A restarted collector re-reads from an older offset: overlapping records are skipped.
    again = make(engine).ingest(data[100:])
    assert (again.events, again.skipped) == (100, 100)
    assert aggregated(engine) == 300
    assert counters(engine, "src").events == 300
    with Session(engine) as session:
        pos = session.get(SourcePosition, ("src", "p0"))
        assert pos is not None and pos.offset == 300


def test_stale_positions_are_detected_and_batch_replanned(engine: Engine) -> None:
    data = records([orjson.dumps(event(i)) for i in range(50)])
    first, second = make(engine), make(engine)
    first.ingest(data[:10])
    second.ingest(data[:10])  # second has no cached state: reads it, skips all
    second.ingest(data[10:30])  # advances past what `first` believes
    result = first.ingest(data[10:50])  # stale: must re-plan and apply only 30..49
    assert result.events == 20 and result.skipped == 20
    assert aggregated(engine) == 50


MALFORMED = [
    (b'{"request_id": "x", "model": "fraud"', "invalid_json"),
    (b'{"request_id": "x\xff\xfe", "model": "fraud"}', "invalid_utf8"),
    (orjson.dumps({**event(1), "features": {"amount": [1, 2]}}), "wrong_type"),
    (orjson.dumps({**event(1), "features": "amount=1"}), "wrong_type"),
    (orjson.dumps({**event(1), "prediction": None}), "wrong_type"),
    (orjson.dumps({k: v for k, v in event(1).items() if k != "model_version"}), "missing_field"),
    (orjson.dumps({k: v for k, v in event(1).items() if k != "timestamp"}), "missing_field"),
    (orjson.dumps({**event(1), "timestamp": "yesterday"}), "invalid_timestamp"),
    (orjson.dumps({**event(1), "timestamp": "2026-01-01T00:00:00"}), "invalid_timestamp"),
    (orjson.dumps({**event(1), "model": "ghost"}), "unknown_model"),
    (orjson.dumps([1, 2]), "wrong_type"),
    (b"x" * 5000, "oversized"),
]


def test_malformed_inputs_become_dead_letters_with_reasons(engine: Engine) -> None:
    good = [orjson.dumps(event(i)) for i in range(len(MALFORMED) + 1)]
    mixed: list[bytes] = []
    for i, (bad, _) in enumerate(MALFORMED):
        mixed += [good[i], bad]
    mixed.append(good[-1])
    result = make(engine, max_payload_bytes=4096, dead_letter_bytes=100).ingest(records(mixed))
    assert (result.events, result.dead_letters) == (len(good), len(MALFORMED))
    with Session(engine) as session:
        rows = session.execute(select(DeadLetter).order_by(DeadLetter.offset)).scalars().all()
    assert [r.reason for r in rows] == [reason for _, reason in MALFORMED]
    assert [r.offset for r in rows] == [2 * i + 1 for i in range(len(MALFORMED))]
    oversized = rows[-1]
    assert (oversized.payload_size, len(oversized.payload), oversized.truncated) == (
        5000,
        100,
        True,
    )
    assert "features.amount" in rows[2].detail and "ghost" in rows[9].detail
    assert counters(engine, "src").dead_letters == len(MALFORMED)
    assert aggregated(engine) == len(good)


def test_string_in_a_numeric_column_is_rejected_not_crashing(engine: Engine) -> None:
    ing = make(engine)
    ing.ingest(records([orjson.dumps(event(i)) for i in range(20)]))
    bad = orjson.dumps({**event(20), "features": {"amount": "lots", "country": "de"}})
    result = Ingestor(engine, "src", "kafka", MODELS).ingest(records([bad], first=20))
    assert result.dead_letters == 1 and result.events == 0
    with Session(engine) as session:
        assert "features.amount" in session.execute(select(DeadLetter.detail)).scalar_one()


def test_windows_lateness_and_late_counter(engine: Engine) -> None:
    hour = 3600.0
    ts = [T0 + 10, T0 + 2 * hour + 5, T0 + 1800, T0 + 2 * hour + 100, T0 + 10]
    ing = make(engine, window=timedelta(hours=1), allowed_lateness=timedelta(minutes=30))
    # T0+1800 and the second T0+10 arrive when the watermark is past T0+2h: their window
    # [T0, T0+1h) ended an hour before, more than the allowed 30 minutes: late.
    result = ing.ingest(records([orjson.dumps(event(i, ts=t)) for i, t in enumerate(ts)]))
    assert (result.events, result.late) == (3, 2)
    ing2 = make(engine, window=timedelta(hours=1), allowed_lateness=timedelta(hours=2))
    within = ing2.ingest(records([orjson.dumps(event(9, ts=T0 + hour + 1))], first=5))
    assert within.events == 1 and within.late == 0
    with Session(engine) as session:
        rows = (
            session.execute(
                select(WindowCount)
                .where(WindowCount.slice_key == "")
                .order_by(WindowCount.window_start)
            )
            .scalars()
            .all()
        )
    assert [(r.window_start.timestamp() - T0, r.events) for r in rows] == [
        (0.0, 1),
        (hour, 1),
        (2 * hour, 2),
    ]
    assert all(r.window_end - r.window_start == timedelta(hours=1) for r in rows)
    assert counters(engine, "src").late == 2


def test_profiles_merge_across_batches_like_one_batch(engine: Engine) -> None:
    data = [orjson.dumps(event(i)) for i in range(400)]
    make(engine).ingest(records(data[:150]))
    make(engine).ingest(records(data[150:], first=150))
    with Session(engine) as session:
        rows = {
            (r.slice_key, r.column): r for r in session.execute(select(WindowProfile)).scalars()
        }
    assert set(rows) == {
        (k, c)
        for k in ("", '{"region":"eu"}', '{"region":"us"}')
        for c in ("amount", "country", "prediction")
    }
    amount = profile_from_bytes(rows[("", "amount")].payload)
    assert amount.n == 400 and rows[("", "amount")].kind == "numeric"
    expected_sum = sum(float(i % 97) for i in range(400))
    assert amount.sums.sum() == pytest.approx(expected_sum)
    country = profile_from_bytes(rows[('{"region":"eu"}', "country")].payload)
    assert country.n == 200 and rows[("", "country")].kind == "categorical"


def test_slice_values_are_capped_into_other(engine: Engine) -> None:
    models = [ModelConfig(name="fraud", slices=["region"], max_slice_values=2)]
    regions = ["eu", "us", "apac", "latam", "eu"]
    data = [orjson.dumps(event(i, metadata={"region": r})) for i, r in enumerate(regions)]
    Ingestor(engine, "src", "kafka", models).ingest(records(data))
    assert aggregated(engine, slice_key='{"region":"eu"}') == 2
    assert aggregated(engine, slice_key='{"region":"(other)"}') == 2  # the one key format


def test_batch_positions_store_end_offsets_for_lag(engine: Engine) -> None:
    ing = make(engine)
    ing.ingest(Batch(records([orjson.dumps(event(0))]), ends={"p0": 10}, details={"p0": {"a": 1}}))
    with Session(engine) as session:
        pos = session.get(SourcePosition, ("src", "p0"))
        assert pos is not None and (pos.offset, pos.end_offset, pos.detail) == (1, 10, {"a": 1})


def test_configuration_mistakes_are_one_line_errors(engine: Engine) -> None:
    with pytest.raises(ConfigError, match="no models configured"):
        Ingestor(engine, "src", "kafka", [])
    with pytest.raises(RegistryError, match="valid: cloudevents, modelwatch, sagemaker"):
        Ingestor(engine, "src", "kafka", MODELS, format="protobuf")


def test_a_batch_over_many_windows_is_merged_in_chunks_like_one(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Profiles are merged and written a few windows at a time (bounded memory): a batch over
    more windows than a chunk stores what one chunk would, new rows and merged ones alike."""

    def run(engine: Engine) -> dict[tuple[Any, ...], int]:
        models = [ModelConfig(name=m) for m in ("a", "b", "c")]
        settings = CollectConfig(pipeline=False, allowed_lateness=timedelta(days=1))
        ingestor = Ingestor(engine, "s", "http", models, settings)
        events = [event(i, T0 + 3600 * (i % 4), model="abc"[i % 3]) for i in range(120)]
        for half in (events[:60], events[60:]):  # the second half merges into stored rows
            first = 0 if half is events[:60] else 60
            ingestor.ingest([RawRecord("k", first + j, first + j + 1, orjson.dumps(e))
                             for j, e in enumerate(half)])  # fmt: skip
        p = WindowProfile
        with Session(engine) as s:
            rows = s.execute(select(p.model, p.window_start, p.slice_key, p.column, p.n)).all()
        return {tuple(r[:-1]): r[-1] for r in rows}

    whole = run(sqlite_engine)
    monkeypatch.setattr(store, "WINDOWS_PER_WRITE", 2)
    other = make_engine(f"{sqlite_engine.url}-chunked")
    upgrade(other)
    assert run(other) == whole
    assert len({k[:2] for k in whole}) == 12  # 3 models x 4 windows, more than a chunk
