"""`GET /v1/models/{m}/metrics?kind=estimated|realized|all` over HTTP: estimated rows with band,
threshold and realized value, both tables in one paged order, 422 on a bad kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from monitor.outcomes import OutcomeResult
from monitor.results.store import store_estimated_results, store_outcome_results
from tests.monitor.app.daemon.conftest import ServerProcess, auth, db_engine

W1 = datetime(2026, 1, 1, tzinfo=UTC)
W2 = W1 + timedelta(hours=1)
HOUR = timedelta(hours=1)
PATH = "/v1/models/fraud/metrics"


def _estimated(key: str, metric: str, value: float, status: str = "ok") -> dict[str, Any]:
    error = metric == "reconstruction_error"
    return {"slice_key": key, "metric": metric, "value": value,
            "ci_low": None if error else value - 0.05, "ci_high": None if error else value + 0.05,
            "realized": None if error else value + 0.01, "threshold_low": 0.8,
            "threshold_high": 1.5 if error else None, "n": 600, "status": status}  # fmt: skip


@pytest.fixture
def stored(server: ServerProcess, tmp_path: Path) -> ServerProcess:
    engine = db_engine(tmp_path)
    store_estimated_results(
        engine, "fraud", "1", (W1, W1 + HOUR), [_estimated("", "accuracy", 0.9)]
    )
    new = [_estimated("", "accuracy", 0.7, "degraded"), _estimated("", "roc_auc", 0.85),
           _estimated('{"region":"eu"}', "accuracy", 0.75),
           _estimated("", "reconstruction_error", 1.8, "drift")]  # fmt: skip
    store_estimated_results(engine, "fraud", "1", (W2, W2 + HOUR), new)
    outcome = OutcomeResult("accuracy", None, 0.72, 0.7, 0.74, 0.9, 0.05, 300, "degraded")
    store_outcome_results(engine, "fraud", "1", (W2, W2 + HOUR), [outcome])
    return server


def get(server: ServerProcess, **params: str) -> httpx.Response:
    return httpx.get(f"{server.url}{PATH}", params=params, headers=auth("MW_T_READ"))


def rows(resp: httpx.Response) -> list[tuple[str, str, str, float]]:
    assert resp.status_code == 200, resp.text
    return [(r["kind"], r["metric"], (r["slice"] or {}).get("region", ""), r["value"])
            for r in resp.json()["results"]]  # fmt: skip


def test_estimated_rows_of_the_newest_window(stored: ServerProcess) -> None:
    resp = get(stored, kind="estimated")
    assert sorted(rows(resp)) == sorted([
        ("estimated", "accuracy", "", 0.7), ("estimated", "roc_auc", "", 0.85),
        ("estimated", "accuracy", "eu", 0.75), ("estimated", "reconstruction_error", "", 1.8),
    ])  # fmt: skip
    by = {(r["metric"], r["slice"] is None): r for r in resp.json()["results"]}
    acc = by[("accuracy", True)]
    assert (acc["status"], acc["threshold_low"], acc["realized"]) == ("degraded", 0.8, 0.71)
    assert acc["ci_low"] == pytest.approx(0.65) and acc["baseline_value"] is None
    err = by[("reconstruction_error", True)]
    assert (err["status"], err["threshold_high"], err["ci_low"]) == ("drift", 1.5, None)
    assert rows(get(stored, kind="estimated", status="drift")) == [
        ("estimated", "reconstruction_error", "", 1.8)
    ]
    old = get(stored, kind="estimated", window_start="2026-01-01T00:00:00Z")
    assert rows(old) == [("estimated", "accuracy", "", 0.9)]
    # the default stays the realized outcome metrics
    assert rows(get(stored)) == [("realized", "accuracy", "", 0.72)]


def test_all_pages_through_both_tables_in_one_order(stored: ServerProcess) -> None:
    everything = rows(get(stored, kind="all", since="2026-01-01T00:00:00Z"))
    assert len(everything) == 6
    assert ("realized", "accuracy", "", 0.72) in everything
    assert ("estimated", "accuracy", "", 0.9) == everything[-1]  # the older window last
    paged: list[tuple[str, str, str, float]] = []
    cursor: str | None = None
    for _ in range(10):
        params = {"kind": "all", "since": "2026-01-01T00:00:00Z", "limit": "1"}
        resp = get(stored, **params, **({"cursor": cursor} if cursor else {}))
        paged += rows(resp)
        cursor = resp.json()["next_cursor"]
        if cursor is None:
            break
    assert paged == everything
    newest = rows(get(stored, kind="all", metric="accuracy", slice="overall"))
    assert newest == [("realized", "accuracy", "", 0.72), ("estimated", "accuracy", "", 0.7)]


def test_bad_kind_metric_and_granularity_are_422(stored: ServerProcess) -> None:
    bad = get(stored, kind="guessed")
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "query.kind"
    wrong = get(stored, metric="reconstruction_error")  # realized has no such metric
    assert wrong.status_code == 422 and wrong.json()["detail"].startswith("metric:")
    assert get(stored, kind="estimated", metric="reconstruction_error").status_code == 200
    periods = get(stored, kind="estimated", granularity="1d")
    assert periods.status_code == 422 and periods.json()["detail"].startswith("granularity:")
