"""Two replicas learn a spec for a new model version (no baseline) from their own first batches:
the window's stored spec wins, the other replica's batch is moved onto it, and it keeps going."""

from __future__ import annotations

from datetime import timedelta

import orjson
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from migrations import upgrade
from monitor.config import CollectConfig, ModelConfig
from monitor.profiles import profile_from_bytes
from monitor.storage import WindowProfile
from tests.collectors.conftest import aggregated, event

MODELS = [ModelConfig(name="fraud", slices=["region"])]
SETTINGS = CollectConfig(pipeline=False, allowed_lateness=timedelta(days=3650))


def _batch(first: int, n: int, scale: float, partition: str) -> list[RawRecord]:
    out = []
    for i in range(first, first + n):
        e = event(i, features={"amount": float(i % 97) * scale, "country": "de"})
        out.append(RawRecord(partition, i, i + 1, orjson.dumps(e)))
    return out


def _amount_specs(engine: Engine) -> set[str]:
    with Session(engine) as s:
        payloads = s.scalars(select(WindowProfile.payload).where(WindowProfile.column == "amount"))
        return {profile_from_bytes(p).spec.fingerprint for p in payloads}


def test_replicas_that_learned_other_specs_converge_on_the_stored_one(engine: Engine) -> None:
    upgrade(engine)
    first = Ingestor(engine, "s", "kafka", MODELS, SETTINGS)
    second = Ingestor(engine, "s", "kafka", MODELS, SETTINGS)
    # Both learn before either commits (as two replicas starting together do); the second's
    # values are 1000x larger, so its edges differ.
    key = ("fraud", "1", "amount")
    second.specs.resolve(key, lambda: [float(i % 97) * 1000.0 for i in range(100)])
    first.ingest(_batch(0, 100, 1.0, "p0"))
    before = dict(second.specs.cache.items())
    result = second.ingest(_batch(100, 100, 1000.0, "p1"))  # used to raise "different specs"
    assert result.events == 100 and aggregated(engine) == 200
    assert len(_amount_specs(engine)) == 1, "every window profile of the column on one spec"
    # The second replica dropped its learned spec and reads the stored one from now on.
    assert before != dict(second.specs.cache.items())
    second.ingest(_batch(200, 50, 1000.0, "p1"))
    assert aggregated(engine) == 250 and len(_amount_specs(engine)) == 1
