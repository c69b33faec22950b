"""The skew job in process: checks stored with their history, `skew` signals and gauges from
the newest run, and a missing source as its own failing item that recovers once the file is
there, never stopping the other check (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client import CollectorRegistry
from sqlalchemy.engine import Engine

from dashboards.metrics import ModelwatchMetrics
from monitor.app.daemon._skew_job import SkewWatch, skew_signals
from monitor.config import parse_config
from monitor.failures import list_failures
from monitor.skew_runs import skew_history
from tests.monitor.test_skew_runs import frames

# The start of this hour: runs are claimed per hour, and a failing item's retry time is real time.
NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


def test_checks_run_on_schedule_and_a_missing_file_is_its_own_item(
    engine: Engine, tmp_path: Path
) -> None:
    serving, offline = frames()
    serving.to_parquet(tmp_path / "serving.parquet")
    offline.to_parquet(tmp_path / "offline.parquet")
    missing = tmp_path / "later.parquet"
    check = {"model": "fraud", "key": "id", "interval": "1h",
             "serving": {"path": str(tmp_path / "serving.parquet")}}  # fmt: skip
    cfg = parse_config({
        "database_url": str(engine.url), "models": [{"name": "fraud"}],
        "skew": [{**check, "name": "good", "offline": {"path": str(tmp_path / "offline.parquet")}},
                 {**check, "name": "late", "offline": {"path": str(missing)}}],
    }, env={})  # fmt: skip
    watch = SkewWatch(engine, cfg, "replica-a")
    assert watch(now=NOW) == 1
    assert watch(now=NOW + timedelta(minutes=1)) == 0  # claimed for this hour already
    [failure] = list_failures(engine, "skew")
    assert failure.item == f"skew late source {missing}" and "file not found" in failure.error
    registry = CollectorRegistry()
    signals = skew_signals(engine, cfg, ModelwatchMetrics(registry, cfg.models), NOW)
    skew = {s.labels["column"]: s for s in signals if s.kind == "skew"}
    assert skew["b"].firing and skew["b"].value == 0.2 and not skew["a"].firing
    assert skew["b"].labels == {"model": "fraud", "check": "good", "column": "b"}
    [failed] = [s for s in signals if s.kind == "evaluation_failed"]
    assert failed.labels["item"] == f"skew late source {missing}" and failed.firing
    labels = {"check": "good", "model": "fraud", "column": "b"}
    assert registry.get_sample_value("modelwatch_skew_mismatch_rate", labels) == 0.2

    offline.to_parquet(missing)  # the file arrives; the next hour's run recovers
    later = NOW + timedelta(hours=2)  # past the item's retry backoff
    assert watch(now=later) == 2
    assert list_failures(engine, "skew") == []
    assert [r.status for r in skew_history(engine, "good", limit=5)] == ["skew", "skew"]
    assert skew_history(engine, "late")[0].n_joined == 200
