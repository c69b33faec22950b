"""An open window's changed profiles are re-evaluated at most once per
`scheduler.open_window_interval_s` (a window that ended at once); one not due stays pending."""

from __future__ import annotations

from datetime import timedelta

import orjson
from sqlalchemy.engine import Engine

from collectors import Ingestor, RawRecord
from monitor.config import CollectConfig, parse_config
from monitor.evaluation.windows import WindowEvaluator
from monitor.storage import pending_changes, utcnow
from tests.monitor.app.daemon.isolation_data import baseline


def test_an_open_window_waits_its_interval_and_an_ended_one_does_not(
    sqlite_engine: Engine,
) -> None:
    config = parse_config({"database_url": "sqlite://", "models": [{"name": "m"}]}, env={})
    baseline(sqlite_engine, "m", ["f0"])
    now = utcnow()
    events = [
        {"request_id": f"r{i}", "model": "m", "model_version": "1", "features": {"f0": 0.1 * i},
         "prediction": 0.5, "timestamp": (now - timedelta(hours=h)).isoformat()}
        for i in range(40) for h in (0, 2)
    ]  # fmt: skip
    settings = CollectConfig(pipeline=False, allowed_lateness=timedelta(days=1))
    Ingestor(sqlite_engine, "t", "http", config.models, settings).ingest(
        [RawRecord("k", i, i + 1, orjson.dumps(e)) for i, e in enumerate(events)]
    )  # one window two hours ago (ended) and the current one (open)

    def evaluated(at: timedelta) -> list[bool]:
        evaluator = WindowEvaluator(
            sqlite_engine, config.models, 3600.0, clock=lambda: now + at,
            open_window_interval_s=300.0,
        )  # fmt: skip
        return [e.window.end > now for e in evaluator.run(now + at)]

    assert evaluated(timedelta(0)) == [False]  # the ended window only
    assert [c.end > now for c in pending_changes(sqlite_engine, "m", "drift")] == [True]
    assert evaluated(timedelta(seconds=10)) == []  # still waiting, still pending
    assert evaluated(timedelta(seconds=301)) == [True]  # waited its interval (or ended)
    assert pending_changes(sqlite_engine, "m", "drift") == []
