"""The segments job in process: a planted segment stored as new then as persisting, `segment`
signals and gauges from the newest run, a window lacking a feature stored as insufficient_data
with the reason, and a missing source as its own failing item (SQLite)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy.engine import Engine

from dashboards.metrics import ModelwatchMetrics
from monitor.app.daemon._segment_job import SegmentWatch, segment_signals
from monitor.config import parse_config
from monitor.failures import list_failures
from monitor.segments import segment_history
from tests.monitor.segments.conftest import planted_frame, shifted_frame

pytestmark = pytest.mark.slow
NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


def test_segment_checks_store_new_then_persisting_segments(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    planted_frame(6000).to_parquet(tmp_path / "scored.parquet")
    planted_frame(3000, seed=9).to_parquet(tmp_path / "scored-ref.parquet")
    planted_frame(600).drop(columns="f").to_parquet(tmp_path / "narrow.parquet")
    shifted_frame(4000, 1).to_parquet(tmp_path / "ref.parquet")
    shifted_frame(4000, 2, extra=2.0).to_parquet(tmp_path / "cur.parquet")
    common = {"model": "fraud", "interval": "1h", "bins": 4, "top": 3,
              "features": ["a", "b", "c", "d", "e", "f"]}  # fmt: skip
    labelled = {**common, "label": "label", "prediction": "pred"}
    cfg = parse_config({
        "database_url": str(sqlite_engine.url), "models": [{"name": "fraud"}],
        "segments": [
            {**labelled, "name": "errors", "current": {"path": str(tmp_path / "scored.parquet")},
             "reference": {"path": str(tmp_path / "scored-ref.parquet")}},
            {**labelled, "name": "narrow", "current": {"path": str(tmp_path / "narrow.parquet")}},
            {**labelled, "name": "gone", "current": {"path": str(tmp_path / "gone.parquet")}},
            {**common, "name": "shift", "mode": "drift",
             "current": {"path": str(tmp_path / "cur.parquet")},
             "reference": {"path": str(tmp_path / "ref.parquet")}},
        ],
    }, env={})  # fmt: skip
    watch = SegmentWatch(sqlite_engine, cfg, "replica-a")
    assert watch(now=NOW) == 3
    assert watch(now=NOW + timedelta(minutes=1)) == 0  # claimed for this hour already
    [failure] = list_failures(sqlite_engine, "segments")
    assert failure.item == f"segments gone source {tmp_path}/gone.parquet"
    [narrow] = segment_history(sqlite_engine, "narrow")
    assert narrow.status == "insufficient_data"
    assert narrow.report["reason"] == "column 'f' missing from the current window"
    [first] = segment_history(sqlite_engine, "errors")
    assert first.status == "segments" and first.n_new == first.n_segments == 3
    top = first.report["segments"][0]
    assert {p["feature"] for p in top["predicates"]} == {"a", "b", "c"}
    assert top["q_value"] < 0.05 and top["persistence"] == "new"
    [drift] = segment_history(sqlite_engine, "shift")
    assert drift.report["estimated"] and drift.mode == "drift" and drift.n_segments >= 1

    # The next window: other rows, binned on the same reference, the same weak segment
    planted_frame(6000, seed=5).to_parquet(tmp_path / "scored.parquet")
    assert watch(now=NOW + timedelta(hours=1)) == 3
    second = segment_history(sqlite_engine, "errors")[0]
    again = second.report["segments"][0]
    assert again["description"] == top["description"] and again["persistence"] == "persisting"
    assert second.n_new < second.n_segments

    registry = CollectorRegistry()
    signals = segment_signals(sqlite_engine, cfg, ModelwatchMetrics(registry, cfg.models), NOW)
    seg = [s for s in signals if s.kind == "segment" and s.labels["check"] == "errors"]
    assert len(seg) == second.n_segments and all(s.firing for s in seg)
    assert seg[0].labels["persistence"] == "persisting" and seg[0].value > 0.5
    assert seg[0].labels["segment"].startswith("a = 3 AND b = x AND c = ")
    labels = {"check": "errors", "model": "fraud", "mode": "labels", "persistence": "persisting"}
    persisting = second.n_segments - second.n_new
    assert registry.get_sample_value("modelwatch_segments_found", labels) == persisting
    [failed] = [s for s in signals if s.kind == "evaluation_failed"]
    assert failed.labels["item"] == f"segments gone source {tmp_path}/gone.parquet"
