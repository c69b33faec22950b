"""The documented signal kinds about the pipeline itself fire through ordinary rules:
`ingest_lag`, `dead_letter_rate`, `no_data` (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
from sqlalchemy import select
from sqlalchemy.engine import Engine

from collectors._base import RawRecord
from collectors._ingest import Ingestor
from monitor.app.daemon._health_signals import DeadLetterRate, no_data_signals
from monitor.app.daemon.wiring import Monitoring
from monitor.config import CollectConfig, Config, parse_config
from monitor.storage import AlertState, SourcePosition, WindowCount, session_factory, transaction
from tests.monitor.app.daemon.isolation_data import events


def _config(url: str) -> Config:
    return parse_config(
        {
            "database_url": url,
            "models": [{"name": "fraud"}, {"name": "churn"}],
            "collect": {"window": "1h"},
            "alerts": {
                "rules": [
                    {"name": "Lagging", "kind": "ingest_lag", "above": 100},
                    {"name": "Poisoned", "kind": "dead_letter_rate", "above": 0.2},
                    {"name": "Silent", "kind": "no_data"},
                ]
            },
        },
        env={},
    )


def _ingest_with_dead_letters(engine: Engine, config: Config, good: int, bad: int) -> None:
    settings = CollectConfig(pipeline=False, allowed_lateness=timedelta(days=3650))
    ingestor = Ingestor(engine, "http", "http", config.models, settings)
    now = datetime.now(UTC)
    batch = events("fraud", ["f0"], 1, good)
    for e in batch:
        e["timestamp"] = now.isoformat()
    payloads = [orjson.dumps(e) for e in batch] + [b"{not json"] * bad
    ingestor.ingest([RawRecord("k", i, i + 1, p) for i, p in enumerate(payloads)])


def _firing(engine: Engine) -> dict[str, dict[str, str]]:
    with session_factory(engine)() as s:
        return {
            r.rule
            + ":"
            + ",".join(
                f"{k}={v}" for k, v in sorted(r.labels.items()) if k in ("model", "source")
            ): dict(r.labels)
            for r in s.scalars(select(AlertState).where(AlertState.state == "firing"))
        }


def test_pipeline_signals_fire_through_rules(engine: Engine) -> None:
    config = _config(str(engine.url))
    _ingest_with_dead_letters(engine, config, good=60, bad=40)
    with transaction(engine) as s:
        s.add(SourcePosition(source="kafka-in", key="t:0", offset=10, end_offset=500))
        s.add(SourcePosition(source="kafka-ok", key="t:0", offset=10, end_offset=20))
    monitoring = Monitoring(engine, config)
    now = datetime.now(UTC)
    monitoring(now=now)
    firing = set(_firing(engine))
    assert "Lagging:source=kafka-in" in firing and "Lagging:source=kafka-ok" not in firing
    assert "Poisoned:source=http" in firing, "40 of 100 records were dead letters"
    assert "Silent:model=churn" in firing, "churn never had an event"
    assert "Silent:model=fraud" not in firing

    # Nothing new arrives: no more dead letters since the last evaluation; fraud goes quiet.
    monitoring(now=now + timedelta(hours=3))
    firing = set(_firing(engine))
    assert "Poisoned:source=http" not in firing
    assert "Silent:model=fraud" in firing


def test_dead_letter_rate_is_per_evaluation_and_zero_without_traffic(engine: Engine) -> None:
    config = _config(str(engine.url))
    rate = DeadLetterRate()
    now = datetime.now(UTC)
    assert rate(engine, now) == []  # no source has counted anything yet
    _ingest_with_dead_letters(engine, config, good=1, bad=0)
    [only] = rate(engine, now)
    assert (only.value, only.firing) == (0.0, False)
    _ingest_with_dead_letters(engine, config, good=0, bad=3)
    [after] = rate(engine, now)
    assert after.value == 1.0 and after.firing


def test_no_data_exactly_at_the_limit_does_not_fire(engine: Engine) -> None:
    config = _config(str(engine.url))
    _ingest_with_dead_letters(engine, config, good=1, bad=0)
    with session_factory(engine)() as s:
        last = max(s.scalars(select(WindowCount.updated_at)))
    [at_limit] = no_data_signals(engine, ["fraud"], timedelta(hours=1), last + timedelta(hours=2))
    assert at_limit.value == 120.0 and not at_limit.firing
    [past] = no_data_signals(
        engine, ["fraud"], timedelta(hours=1), last + timedelta(hours=2, seconds=1)
    )
    assert past.firing
