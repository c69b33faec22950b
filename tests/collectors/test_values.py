"""Odd values through the Ingestor on SQLite and PostgreSQL: huge numbers, booleans, slice
values of every kind, events dated in the future, deep JSON, and a poisoned stored profile."""

from __future__ import annotations

import logging
import time

import numpy as np
import orjson
import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from monitor.config import CollectConfig, ModelConfig
from monitor.profiles import CategoricalProfile, NumericProfile, profile_from_bytes
from monitor.storage import DeadLetter, SourcePosition, WindowCount, WindowProfile
from tests.collectors.conftest import T0, aggregated, event

MODELS = [ModelConfig(name="fraud", slices=["region", "tier", "is_new"])]
HUGE = [1e200, 1e308, -1.7976931348623157e308, 1e-300, 0.0, 7.5]


def records(payloads: list[bytes], key: str = "p0", first: int = 0) -> list[RawRecord]:
    return [RawRecord(key, first + i, first + i + 1, p) for i, p in enumerate(payloads)]


def make(engine: Engine, **settings: object) -> Ingestor:
    return Ingestor(engine, "src", "kafka", MODELS, CollectConfig(**settings))  # type: ignore[arg-type]


def stored(engine: Engine, column: str, slice_key: str = "") -> list[bytes]:
    with Session(engine) as s:
        return list(
            s.scalars(
                select(WindowProfile.payload).where(
                    WindowProfile.column == column, WindowProfile.slice_key == slice_key
                )
            )
        )


def with_amount(i: int, amount: object) -> bytes:
    return orjson.dumps(event(i, features={"amount": amount, "country": "de"}))


def test_huge_values_never_make_a_stored_profile_non_finite(engine: Engine) -> None:
    ing = make(engine)
    for n in range(3):  # several batches of one window: stored profiles are merged each time
        batch = [with_amount(10 * n + i, v) for i, v in enumerate(HUGE)]
        assert ing.ingest(records(batch, first=len(HUGE) * n)).events == len(HUGE)
    assert aggregated(engine) == 3 * len(HUGE)
    (payload,) = stored(engine, "amount")
    prof = profile_from_bytes(payload)
    assert isinstance(prof, NumericProfile) and prof.n == 3 * len(HUGE)
    assert np.isfinite([prof.mean, prof.m2, *prof.sums]).all()
    assert (prof.minimum, prof.maximum) == (-1.7976931348623157e308, 1e308)


def test_a_poisoned_stored_profile_does_not_block_later_batches(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    make(engine).ingest(records([with_amount(i, float(i)) for i in range(5)]))
    (payload,) = stored(engine, "amount")
    size = int.from_bytes(payload[4:8], "little")
    header = {**orjson.loads(payload[8 : 8 + size]), "m2": None}  # as 1e200 left it before
    head = orjson.dumps(header)
    poisoned = payload[:4] + len(head).to_bytes(4, "little") + head + payload[8 + size :]
    with Session(engine) as s, s.begin():
        s.execute(update(WindowProfile).where(WindowProfile.slice_key == "").values(
            payload=poisoned
        ).where(WindowProfile.column == "amount"))  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="collectors._store"):
        result = make(engine).ingest(records([with_amount(i, 1.0) for i in range(5, 8)], first=5))
    assert result.events == 3 and aggregated(engine) == 8
    (repaired,) = stored(engine, "amount")
    prof = profile_from_bytes(repaired)
    assert isinstance(prof, NumericProfile) and prof.n == 3  # started afresh from this batch
    assert "column 'amount'" in caplog.text and "m2 is None" in caplog.text


def test_booleans_and_numbers_are_slice_values_in_the_one_key_format(engine: Engine) -> None:
    kinds: list[dict[str, object]] = [
        {"region": "eu", "tier": 3, "is_new": True},
        {"region": "eu", "tier": 3.0, "is_new": False},
        {"region": "eu", "tier": 2.5, "is_new": True},
    ]
    batch = [
        orjson.dumps(event(i, features={"amount": 1.0, "flag": i % 2 == 0}, metadata=kinds[i % 3]))
        for i in range(9)
    ]
    result = make(engine).ingest(records(batch))
    assert (result.events, result.dead_letters) == (9, 0)
    with Session(engine) as s:
        keys = {k: n for k, n in s.execute(select(WindowCount.slice_key, WindowCount.events))}
    assert keys == {
        "": 9,
        '{"region":"eu"}': 9,
        '{"tier":"3"}': 6,
        '{"tier":"2.5"}': 3,
        '{"is_new":"true"}': 6,
        '{"is_new":"false"}': 3,
    }
    (flag,) = stored(engine, "flag")
    prof = profile_from_bytes(flag)
    assert isinstance(prof, CategoricalProfile)
    assert prof.category_counts() == {"true": 5, "false": 4}


def test_one_event_far_in_the_future_is_a_dead_letter_and_moves_no_watermark(
    engine: Engine,
) -> None:
    future = T0 + 200 * 365 * 86400
    batch = [orjson.dumps(event(0, ts=future))] + [orjson.dumps(event(i)) for i in range(1, 150)]
    result = make(engine).ingest(records(batch))
    assert (result.events, result.dead_letters, result.late) == (149, 1, 0)
    later = make(engine).ingest(records([orjson.dumps(event(150))], first=150))
    assert (later.events, later.late) == (1, 0)
    with Session(engine) as s:
        dead = s.execute(select(DeadLetter)).scalar_one()
        mark = s.get(SourcePosition, ("src", "p0"))
    assert (dead.reason, dead.offset) == ("future_timestamp", 0)
    assert "collect.max_future_skew" in dead.detail
    assert mark is not None and mark.watermark is not None
    assert mark.watermark.timestamp() <= time.time()


def test_max_future_skew_is_configurable_at_the_exact_edge(engine: Engine) -> None:
    now = time.time()
    ing = make(engine, max_future_skew="1h")
    ok = ing.ingest(records([orjson.dumps(event(0, ts=now + 3000))]))
    late = ing.ingest(records([orjson.dumps(event(1, ts=now + 7200))], first=1))
    assert (ok.events, late.dead_letters) == (1, 1)


def nested(depth: int) -> bytes:
    return b"[" * depth + b"1" + b"]" * depth


@pytest.mark.parametrize("depth", [65, 256, 1000, 1024, 5000])
def test_deeply_nested_json_is_a_too_deep_dead_letter(engine: Engine, depth: int) -> None:
    deep = orjson.dumps(event(1))[:-1] + b',"extra":' + nested(depth) + b"}"
    shallow = orjson.dumps(event(2))[:-1] + b',"extra":' + nested(60) + b"}"
    batch = [orjson.dumps(event(0)), deep, shallow]
    result = make(engine, max_payload_bytes=1 << 20).ingest(records(batch))
    assert (result.events, result.dead_letters) == (2, 1)
    with Session(engine) as s:
        assert s.execute(select(DeadLetter.reason)).scalar_one() == "too_deep"


def test_a_boolean_in_a_numeric_column_is_a_wrong_type_dead_letter(engine: Engine) -> None:
    make(engine).ingest(records([with_amount(i, float(i)) for i in range(5)]))
    result = make(engine).ingest(records([with_amount(5, True), with_amount(6, 2.0)], first=5))
    assert (result.events, result.dead_letters) == (1, 1)
    with Session(engine) as s:
        detail = s.execute(select(DeadLetter.detail)).scalar_one()
    assert detail == "features.amount: expected number (column is numeric)"


def test_a_label_dated_in_the_future_is_a_dead_letter_too(engine: Engine) -> None:
    label = {"request_id": "r1", "model": "fraud", "label": 1, "timestamp": time.time() + 86400}
    ok = {**label, "request_id": "r2", "timestamp": T0}
    result = make(engine).ingest(records([orjson.dumps(label), orjson.dumps(ok)]))
    assert (result.labels, result.dead_letters) == (1, 1)
    with Session(engine) as s:
        assert s.execute(select(DeadLetter.reason)).scalar_one() == "future_timestamp"


def test_events_without_a_slice_value_are_in_the_null_slice_like_a_baselines_nulls(
    engine: Engine,
) -> None:
    batch = [
        orjson.dumps(event(i, metadata={"region": "eu"} if i % 2 else {"region": None}))
        for i in range(6)
    ]
    make(engine).ingest(records(batch))
    assert aggregated(engine, slice_key='{"region":"eu"}') == 3
    assert aggregated(engine, slice_key='{"region":"(null)"}') == 3
    assert aggregated(engine, slice_key='{"tier":"(null)"}') == 6  # no event carries a tier
