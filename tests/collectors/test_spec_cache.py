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


@pytest.mark.slow
def test_a_versions_baseline_specs_are_read_in_one_statement(tmp_path: Path) -> None:
    """A fleet's first batches read every column's spec: one statement per version and batch,
    not one per column (at 1,000 models × 21 columns, 42,000 round trips held the drain)."""
    import pandas as pd
    from sqlalchemy import event as sa_event

    from monitor.baselines.store import save_baseline
    from monitor.profiles import profile_frame, specs_for

    engine = make_engine(f"sqlite:///{tmp_path / 'mw.db'}")
    upgrade(engine)
    ref = pd.DataFrame({"amount": [float(i) for i in range(200)],
                        "country": ["de", "fr"] * 100, "prediction": [0.1, 0.9] * 100})  # fmt: skip
    save_baseline(engine, "m1", "1", profile_frame(ref, specs_for(list(ref.columns), ref)))
    ingestor = Ingestor(engine, "s", "kafka", [ModelConfig(name="m1")], SETTINGS)
    statements: list[str] = []
    sa_event.listen(engine, "before_cursor_execute",
                    lambda *args: statements.append(args[2]))  # fmt: skip
    records = [RawRecord("p", i, i + 1, orjson.dumps(event(i, model="m1"))) for i in range(20)]
    assert ingestor.ingest(records).events == 20
    reads = [s for s in statements if "FROM baseline_profiles" in s]
    assert len(reads) == 1, reads
    cached = ingestor.specs.cache.keys()
    assert sorted(key[2] for key in cached) == ["amount", "country", "prediction"]
    # the spec is the baseline's (its edges), not one learned from the batch
    assert ingestor.specs.kind_of("m1", "1", "country") == "categorical"
    engine.dispose()
