"""`?granularity=1d`: drift and outcome results over a day, merged from window summaries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import orjson
import pandas as pd
import pytest

from collectors import Ingestor, RawRecord
from monitor.baselines.store import save_baseline
from monitor.config import CollectConfig, ModelConfig
from monitor.outcomes import evaluate_outcomes
from monitor.profiles import profile_frame, specs_for
from tests.collectors.conftest import T0, event
from tests.monitor.app.daemon.conftest import ServerProcess, auth, db_engine

DAY = datetime.fromtimestamp(T0, UTC)
N = 300  # 100 events in each of three hourly windows


def _events() -> list[dict[str, object]]:
    return [event(i, ts=T0 + (i // 100) * 3600 + i % 100) for i in range(N)]


@pytest.fixture(scope="module")
def history(module_server: ServerProcess) -> ServerProcess:
    """A day of fraud traffic with labels, shared by the module's reading tests."""
    engine = db_engine(module_server.directory)
    frame = pd.DataFrame(
        [{**e["features"], "prediction": e["prediction"], **e["metadata"]} for e in _events()]
    )
    cols = ["amount", "country", "prediction"]
    save_baseline(engine, "fraud", "1", profile_frame(frame, specs_for(cols, frame), ["region"]))
    ing = Ingestor(
        engine, "t", "http", [ModelConfig(name="fraud", slices=["region"])], CollectConfig()
    )
    labels = [
        {
            "request_id": f"r{i}",
            "model": "fraud",
            "label": int(i % 3 == 0),
            "timestamp": T0 + 4 * 3600,
        }
        for i in range(N)
    ]
    items = [*_events(), *labels]
    ing.ingest([RawRecord("t", i, i + 1, orjson.dumps(x)) for i, x in enumerate(items)])
    engine.dispose()
    return module_server


def get(server: ServerProcess, path: str, **params: str) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", params=params, headers=auth("MW_T_READ"), timeout=30)


def test_metrics_over_a_day_merge_the_windows(history: ServerProcess) -> None:
    resp = get(history, "/v1/models/fraud/metrics", granularity="1d", slice="overall")
    assert resp.status_code == 200, resp.text
    rows = {r["metric"]: r for r in resp.json()["results"]}
    acc = rows["accuracy"]
    assert acc["window_start"].startswith("2026-01-01T00:00:00")
    assert acc["window_end"].startswith("2026-01-02T00:00:00")
    raw = evaluate_outcomes(
        [int(i % 3 == 0) for i in range(N)],
        [e["prediction"] for e in _events()],
        metrics=["accuracy", "recall"],
    )
    assert (acc["n"], acc["value"]) == (raw[0].n, raw[0].value) == (N, raw[0].value)
    assert rows["recall"]["value"] == raw[1].value
    one = get(
        history,
        "/v1/models/fraud/metrics",
        granularity="1h",
        slice="overall",
        window_start=(DAY + timedelta(hours=1, minutes=5)).isoformat(),
        metric="accuracy",
    )
    assert [(r["n"], r["window_start"][:19]) for r in one.json()["results"]] == [
        (100, "2026-01-01T01:00:00")
    ]


def test_drift_over_a_day_compares_the_merged_profiles(history: ServerProcess) -> None:
    resp = get(history, "/v1/models/fraud/drift", granularity="1d", column="amount")
    assert resp.status_code == 200, resp.text
    rows = resp.json()["results"]
    overall = [r for r in rows if r["slice"] is None]
    assert overall and all(r["n_current"] == N for r in overall)
    assert {r["status"] for r in overall} == {"ok"}  # the day is the baseline itself
    eu = [r for r in rows if r["slice"] == {"region": "eu"}]
    assert eu and all(r["n_current"] == N // 2 for r in eu)


@pytest.mark.parametrize("value", ["90m", "abc", "0s"])
def test_a_granularity_that_is_not_whole_windows_is_422(history: ServerProcess, value: str) -> None:
    resp = get(history, "/v1/models/fraud/metrics", granularity=value)
    assert resp.status_code == 422
    assert "granularity" in resp.text
