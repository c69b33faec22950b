"""Estimation in the daemon: collectors derive `__cbpe_score` and `__pca_error` per event from the
baseline's calibration and PCA model, the evaluate job estimates each changed window from those
profiles, and the stored estimates equal `modelwatch estimate CURRENT --baseline` on the same rows
(SQLite and PostgreSQL, real ingest and evaluate job)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alerts import Evaluator
from collectors import Ingestor, RawRecord
from dashboards.metrics import ModelwatchMetrics
from monitor.app.daemon.metrics import MetricsPublisher
from monitor.app.daemon.signals import estimate_signals
from monitor.config import parse_config
from monitor.config.alerts import AlertsConfig
from monitor.evaluation.windows import WindowEvaluator
from monitor.storage import AlertState, EstimatedResultRow, WindowProfile, session_factory
from tests.collectors.conftest import T0
from tests.conftest import run_cli

HOUR = 3600.0
N_REF, N_CUR = 4000, 1200


def _frame(n: int, seed: int, shifted: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1, n)
    b = rng.normal(0, 1.02, n) if shifted else a + rng.normal(0, 0.2, n)
    a[rng.random(n) < 0.02] = np.nan
    p = rng.beta(0.5, 0.5, n)
    score = 0.5 + (p - 0.5) * 0.25 if shifted else p
    return pd.DataFrame({
        "a": a, "b": b, "c": rng.choice(["x", "y", "z"], n), "region": rng.choice(["eu", "us"], n),
        "score": score, "label": (rng.random(n) < p).astype(int),
    })  # fmt: skip


def _config(url: str) -> Any:
    return parse_config({"database_url": url, "models": [{"name": "m", "slices": ["region"]}]},
                        env={})  # fmt: skip


def _events(frame: pd.DataFrame, labels: bool, start: float = T0) -> list[RawRecord]:
    items: list[dict[str, Any]] = []
    for i, row in enumerate(frame.itertuples(index=False)):
        features = {"a": None if np.isnan(row.a) else float(row.a), "b": float(row.b), "c": row.c}
        items.append(
            {
                "request_id": f"r{i}",
                "model": "m",
                "model_version": "1",
                "timestamp": start + i * 0.5,
                "features": features,
                "prediction": float(row.score),
                "metadata": {"region": row.region},
            }
        )
    return records(items, frame["label"] if labels else [], start)


def records(items: list[dict[str, Any]], labels: Any, start: float) -> list[RawRecord]:
    """Prediction `items`, then a label event per value of `labels` (request ids r0, r1, ...)."""
    items = items + [{"request_id": f"r{i}", "model": "m", "label": int(y), "timestamp": start}
                     for i, y in enumerate(labels)]  # fmt: skip
    return [RawRecord("s", i, i + 1, orjson.dumps(x)) for i, x in enumerate(items)]


@pytest.fixture
def baseline(engine: Engine, tmp_path: Path) -> str:
    database_url = engine.url.render_as_string(hide_password=False)
    ref = tmp_path / "ref.parquet"
    _frame(N_REF, 1).to_parquet(ref)
    made = run_cli("baseline", "create", "--model", "m", "--version", "1", "--score", "score",
                   "--label", "label", "--features", "a,b,c", "--slice-by", "region",
                   "--database-url", database_url, str(ref))  # fmt: skip
    assert made.returncode == 0, made.stderr
    return database_url


def _run(url: str, frame: pd.DataFrame, labels: bool) -> Engine:
    return ingest_and_evaluate(url, _config(url), _events(frame, labels))


def ingest_and_evaluate(url: str, config: Any, records: list[RawRecord]) -> Engine:
    """Ingest `records` through a real Ingestor, run the evaluate job once; the engine."""
    from monitor.storage import make_engine

    engine = make_engine(url)
    Ingestor(engine, "s", "http", config.models, config.collect).ingest(records)
    WindowEvaluator(engine, config.models, HOUR).run()
    return engine


def stored_rows(engine: Engine) -> dict[tuple[str, str], EstimatedResultRow]:
    """The stored estimated rows by (slice key, metric)."""
    with session_factory(engine)() as s:
        rows = s.scalars(select(EstimatedResultRow)).all()
    return {(r.slice_key, r.metric): r for r in rows}


def same_as_cli(
    stored: dict[tuple[str, str], EstimatedResultRow], want: dict[str, Any]
) -> EstimatedResultRow:
    """The stored row of a `modelwatch estimate --json` result, checked equal to it."""
    got = stored[(slice_text(want), want["metric"])]
    assert got.status == want["status"] and got.n == want["n"]
    for ours, theirs in ((got.value, want["estimated"]), (got.ci_low, want["ci_low"]),
                         (got.ci_high, want["ci_high"]),
                         (got.threshold_low, want["threshold_low"])):  # fmt: skip
        assert ours == pytest.approx(theirs, abs=1e-9)
    return got


def slice_text(result: dict[str, Any]) -> str:
    """The slice key of a `modelwatch estimate --json` result."""
    part = result["slice"]
    return "" if part is None else json.dumps(part, separators=(",", ":"))


def test_daemon_estimates_equal_the_one_shot_cli(baseline: str, tmp_path: Path) -> None:
    frame = _frame(N_CUR, 2)
    cur = tmp_path / "cur.parquet"
    frame.to_parquet(cur)
    engine = _run(baseline, frame, labels=True)
    stored = stored_rows(engine)
    cli = run_cli("estimate", str(cur), "--baseline", "default", "--model", "m", "--slice-by",
                  "region", "--database-url", baseline, "--json", "-")  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    document = json.loads(cli.stdout)
    assert len(document["results"]) == 18  # 6 metrics: overall, eu, us
    for want in document["results"]:
        same_as_cli(stored, want)
    mv = document["multivariate"]
    err = stored[("", "reconstruction_error")]
    assert err.value == pytest.approx(mv["value"], rel=1e-9) and err.n == mv["n"] == N_CUR
    assert (err.status, err.threshold_high) == (mv["status"], pytest.approx(mv["threshold"]))
    # realized from the joined labels' summaries, inside the band on an unshifted stream
    overall = {m: r for (k, m), r in stored.items() if k == ""}
    cli_overall = {r["metric"]: r for r in document["results"] if r["slice"] is None}
    for metric in ("accuracy", "specificity"):  # specificity: from the summaries' confusion
        assert overall[metric].realized == pytest.approx(cli_overall[metric]["realized"])
    for metric in ("accuracy", "roc_auc", "precision", "recall", "f1", "specificity"):
        r = overall[metric]
        assert r.realized is not None and r.ci_low <= r.realized <= r.ci_high, metric
    now = datetime.now(UTC)
    assert not [s for s in estimate_signals(engine, ["m"], now) if s.firing]
    engine.dispose()


def test_shifted_stream_fires_both_signals(baseline: str) -> None:
    engine = _run(baseline, _frame(N_CUR, 3, shifted=True), labels=False)
    signals = estimate_signals(engine, ["m"], datetime.now(UTC))
    firing = {(s.kind, s.labels.get("metric"), s.labels["slice"]) for s in signals if s.firing}
    assert ("estimated_outcome", "accuracy", "") in firing
    assert ("multivariate_drift", None, "") in firing
    # alert rules over both kinds fire, with the default annotations of each kind
    rules = [
        {
            "name": "EstimatedDrop",
            "kind": "estimated_outcome",
            "receivers": ["hook"],
            "matchers": ['metric="accuracy"', 'slice=""'],
        },
        {"name": "JointDrift", "kind": "multivariate_drift", "receivers": ["hook"]},
    ]
    hook = [{"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/hook"}]
    alerts = AlertsConfig.model_validate({"receivers": hook, "rules": rules})
    Evaluator(engine, alerts).evaluate(signals, datetime.now(UTC))
    with session_factory(engine)() as s:
        states = s.execute(select(AlertState.rule, AlertState.state, AlertState.annotations)).all()
    fired = {rule: notes["summary"] for rule, state, notes in states if state == "firing"}
    assert fired["EstimatedDrop"] == "Estimated accuracy of m 1 degraded (slice overall)"
    assert fired["JointDrift"].startswith("Multivariate drift in m 1")
    # no labels joined: no realized value, and the slices are estimated too
    stored = stored_rows(engine)
    assert all(r.realized is None for r in stored.values())
    assert {k for k, _ in stored} == {"", '{"region":"eu"}', '{"region":"us"}'}
    # the gauges of the newest window, slice labels bounded like every other slice label
    registry = CollectorRegistry()
    config = _config(baseline)
    MetricsPublisher(engine, ModelwatchMetrics(registry, config.models)).publish(["m"])
    labels = {"model": "m", "version": "1", "metric": "accuracy", "slice": "all"}
    acc = stored[("", "accuracy")]
    assert registry.get_sample_value("modelwatch_estimated_value", labels) == acc.value
    low = registry.get_sample_value("modelwatch_estimated_threshold", {**labels, "bound": "low"})
    assert low == acc.threshold_low and acc.value is not None and acc.value < low
    assert registry.get_sample_value("modelwatch_estimated_realized", labels) is None
    err = {**labels, "metric": "reconstruction_error", "bound": "high"}
    assert registry.get_sample_value("modelwatch_estimated_threshold", err) == pytest.approx(
        stored[("", "reconstruction_error")].threshold_high
    )
    eu = {**labels, "slice": "region=eu", "bound": "high"}
    assert registry.get_sample_value("modelwatch_estimated_band", eu) is not None
    engine.dispose()


def test_derived_columns_are_profiled_per_slice_and_skipped_without_a_calibration(
    engine: Engine,
) -> None:
    # no baseline: nothing derived, nothing estimated, the window still ingested and evaluated
    config = _config(str(engine.url))
    Ingestor(engine, "s", "http", config.models, config.collect).ingest(
        _events(_frame(50, 4), labels=False)
    )
    WindowEvaluator(engine, config.models, HOUR).run()
    with session_factory(engine)() as s:
        columns = set(s.scalars(select(WindowProfile.column)))
    assert "a" in columns and not columns & {"__cbpe_score", "__pca_error"}
    assert stored_rows(engine) == {}


def test_a_window_that_cannot_be_estimated_is_recorded_and_stays_pending(baseline: str) -> None:
    from monitor.storage import JobFailure, WindowChange, make_engine, transaction

    engine = make_engine(baseline)
    config = _config(baseline)
    ingestor = Ingestor(engine, "s", "http", config.models, config.collect)
    ingestor.ingest(_events(_frame(300, 5), labels=False))
    later = [RawRecord("s", 1000 + r.start, 1001 + r.start, r.payload)
             for r in _events(_frame(300, 6), labels=False, start=T0 + HOUR)]  # fmt: skip
    ingestor.ingest(later)
    broken = datetime.fromtimestamp(T0, UTC)
    with transaction(engine) as s:
        row = s.scalars(select(WindowProfile).where(
            WindowProfile.column == "__cbpe_score", WindowProfile.slice_key == "",
            WindowProfile.window_start == broken)).one()  # fmt: skip
        row.payload = b"not a profile"
    WindowEvaluator(engine, config.models, HOUR).run()
    with session_factory(engine)() as s:
        failures = s.scalars(select(JobFailure.item)).all()
        pending = s.scalars(select(WindowChange.window_start).where(
            WindowChange.kind == "estimate", WindowChange.pending.is_(True))).all()  # fmt: skip
        starts = set(s.scalars(select(EstimatedResultRow.window_start)))
    assert [f for f in failures if f.startswith("estimate m/1 ")] == [
        f"estimate m/1 {broken.isoformat()}"
    ]
    assert [p.replace(tzinfo=UTC) if p.tzinfo is None else p for p in pending] == [broken]
    assert {t.replace(tzinfo=UTC) if t.tzinfo is None else t for t in starts} == {
        datetime.fromtimestamp(T0 + HOUR, UTC)
    }
    engine.dispose()
