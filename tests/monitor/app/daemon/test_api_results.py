"""Drift and outcome results over HTTP: newest window by default, filters, 404 and 422."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from monitor.detectors import DriftResult
from monitor.detectors._base import Status
from monitor.outcomes import OutcomeResult
from monitor.results.store import store_drift_results, store_outcome_results
from tests.monitor.app.daemon.conftest import ServerProcess, auth, db_engine

W1 = datetime(2026, 1, 1, tzinfo=UTC)
W2 = W1 + timedelta(hours=1)
HOUR = timedelta(hours=1)


def drift(column: str, region: str | None, value: float, status: Status) -> DriftResult:
    where = {"region": region} if region else None
    return DriftResult(column, where, "numeric", "psi", value, 0.2, None, 1000, 500, status)


@pytest.fixture(scope="module")
def stored(module_server: ServerProcess) -> ServerProcess:
    """Results of fraud version 1 in two windows, shared by the module's reading tests."""
    engine = db_engine(module_server.directory)
    old = [drift("amount", None, 0.05, "ok")]
    new = [
        drift("amount", None, 0.31, "drift"),
        drift("amount", "eu", 0.4, "drift"),
        drift("age", None, 0.01, "ok"),
        drift("age", "eu", 0.02, "ok"),
    ]
    store_drift_results(engine, "fraud", "1", (W1, W1 + HOUR), old)
    store_drift_results(engine, "fraud", "1", (W2, W2 + HOUR), new)
    outcome = OutcomeResult(
        "accuracy", {"region": "us"}, 0.81, 0.78, 0.84, 0.9, 0.05, 700, "degraded"
    )
    store_outcome_results(engine, "fraud", "1", (W2, W2 + HOUR), [outcome])
    engine.dispose()
    return module_server


def get(server: ServerProcess, path: str, **params: str) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", params=params, headers=auth("MW_T_READ"))


def columns(resp: httpx.Response) -> list[tuple[str, str, float]]:
    """(column, region of the slice or "" for overall, value) per row."""
    assert resp.status_code == 200, resp.text
    rows = resp.json()["results"]
    assert all(r["slice"] in (None, {"region": "eu"}) for r in rows)
    return [(r["column"], (r["slice"] or {}).get("region", ""), r["value"]) for r in rows]


def test_drift_defaults_to_the_newest_window(stored: ServerProcess) -> None:
    resp = get(stored, "/v1/models/fraud/drift")
    rows = resp.json()["results"]
    assert {r["window_start"] for r in rows} == {"2026-01-01T01:00:00Z"}
    assert sorted(columns(resp)) == sorted(
        [("amount", "", 0.31), ("amount", "eu", 0.4), ("age", "", 0.01), ("age", "eu", 0.02)]
    )  # fmt: skip
    assert rows[0]["n_reference"] == 1000 and rows[0]["method"] == "psi"


def test_drift_filters(stored: ServerProcess) -> None:
    path = "/v1/models/fraud/drift"
    assert len(columns(get(stored, path, since="2026-01-01T00:00:00Z"))) == 5
    old = get(stored, path, window_start="2026-01-01T00:00:00+00:00")
    assert columns(old) == [("amount", "", 0.05)]
    eu = [("amount", "eu", 0.4), ("age", "eu", 0.02)]
    assert sorted(columns(get(stored, path, slice="region=eu"))) == sorted(eu)
    assert sorted(columns(get(stored, path, slice='{"region": "eu"}'))) == sorted(eu)
    overall = get(stored, path, slice="overall", column="amount")
    assert columns(overall) == [("amount", "", 0.31)]
    assert len(columns(get(stored, path, status="drift"))) == 2
    assert len(columns(get(stored, path, limit="1"))) == 1
    assert columns(get(stored, path, version="2")) == []


def test_metrics(stored: ServerProcess) -> None:
    resp = get(stored, "/v1/models/fraud/metrics")
    assert resp.status_code == 200
    [row] = resp.json()["results"]
    assert row["metric"] == "accuracy" and row["slice"] == {"region": "us"}
    assert (row["value"], row["ci_low"], row["status"]) == (0.81, 0.78, "degraded")
    assert get(stored, "/v1/models/fraud/metrics", metric="roc_auc").json()["results"] == []
    assert get(stored, "/v1/models/fraud/metrics", metric="auc").status_code == 422


def test_unknown_model_404_and_bad_filters_422(stored: ServerProcess) -> None:
    for kind in ("drift", "metrics"):
        resp = get(stored, f"/v1/models/ghost/{kind}")
        assert resp.status_code == 404 and "unknown model 'ghost'" in resp.json()["detail"]
    bad = get(stored, "/v1/models/fraud/drift", slice="{not json")
    assert bad.status_code == 422 and bad.json()["detail"].startswith("slice:")
    naive = get(stored, "/v1/models/fraud/drift", since="2026-01-01T00:00:00")
    assert naive.status_code == 422 and naive.json()["detail"].startswith("since:")
    limit = get(stored, "/v1/models/fraud/drift", limit="0")
    assert limit.status_code == 422 and limit.json()["errors"][0]["field"] == "query.limit"
    assert httpx.get(f"{stored.url}/v1/models/fraud/drift").status_code == 401
    forbidden = httpx.get(f"{stored.url}/v1/models/fraud/metrics", headers=auth("MW_T_INGEST"))
    assert forbidden.status_code == 403


def test_configured_model_without_results_is_empty_not_404(server: ServerProcess) -> None:
    resp = get(server, "/v1/models/fraud/drift")
    assert resp.status_code == 200 and resp.json() == {
        "model": "fraud",
        "results": [],
        "next_cursor": None,
    }
