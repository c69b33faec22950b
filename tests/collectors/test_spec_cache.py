"""Per-model column specs are loaded when a model's events first need them, within a bound."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from collectors import Ingestor, RawRecord
from collectors._specs import SpecResolver
from migrations import upgrade
from monitor.config import CollectConfig, ModelConfig
from monitor.storage import make_engine
from tests.collectors.conftest import event

SETTINGS = CollectConfig(pipeline=False, allowed_lateness=timedelta(days=3650))


@pytest.mark.slow
def test_specs_are_loaded_per_model_on_first_use_and_kept_within_the_bound(
    tmp_path: Path,
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'mw.db'}")
    upgrade(engine)
    models = [ModelConfig(name=f"m{i}") for i in range(3)]
    ingestor = Ingestor(engine, "s", "kafka", models, SETTINGS)
    ingestor.specs = SpecResolver(engine, ingestor.backend, cache_size=4)
    assert len(ingestor.specs.cache) == 0  # nothing loaded for a configured model up front

    records = [RawRecord("p", i, i + 1, orjson.dumps(event(i, model="m1"))) for i in range(20)]
    assert ingestor.ingest(records).events == 20
    loaded = ingestor.specs.cache.keys()
    assert {key[0] for key in loaded} == {"m1"}  # only the model that sent events
    assert sorted(key[2] for key in loaded) == ["amount", "country", "prediction"]

    more = [RawRecord("p", i, i + 1, orjson.dumps(event(i, model="m2"))) for i in range(20, 40)]
    assert ingestor.ingest(more).events == 20
    assert len(ingestor.specs.cache) == 4  # the bound: m1's least recent specs went
    assert ingestor.specs.cache.evicted == 2
    assert ingestor.specs.cache.keys()[-3:] == [
        ("m2", "1", c) for c in ("amount", "country", "prediction")
    ]  # noqa: E501

    # An evicted spec is read again from what storage holds: the same spec, not a new one.
    again = [RawRecord("p", i, i + 1, orjson.dumps(event(i, model="m1"))) for i in range(40, 60)]
    assert ingestor.ingest(again).events == 20
    engine.dispose()
