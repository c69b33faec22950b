"""Cursor pagination on every list endpoint, enum filters as 422, one error vocabulary."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from guards.registry import register_version
from monitor.detectors import DriftResult
from monitor.results.store import store_drift_results
from monitor.storage import AlertState, transaction
from tests.monitor.app.daemon.conftest import ServerProcess, auth, db_engine

W1 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _get(server: ServerProcess, path: str, **params: Any) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", params=params, headers=auth("MW_T_ADMIN"))


def _walk(server: ServerProcess, path: str, key: str, limit: int, **params: Any) -> list[Any]:
    """Every item of a list, page by page, checking each page's size and cursor."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        extra = {"cursor": cursor} if cursor else {}
        body = _get(server, path, limit=limit, **params, **extra).json()
        assert len(body[key]) <= limit
        items += body[key]
        cursor = body["next_cursor"]
        if cursor is None:
            return items
        assert len(body[key]) == limit
    raise AssertionError("pagination did not end")


def _drift(column: str, region: str | None) -> DriftResult:
    where = {"region": region} if region else None
    return DriftResult(column, where, "numeric", "psi", 0.1, 0.2, None, 1000, 500, "ok")


@pytest.fixture(scope="module")
def seeded(module_idle_server: ServerProcess) -> ServerProcess:
    """Rows seeded after the server's one evaluation, so no tick reorders them mid-walk.

    Shared by the module: the tests read, and the silences one test adds match nothing here."""
    engine = db_engine(module_idle_server.directory)
    artifact = module_idle_server.directory / "model.onnx"
    artifact.write_bytes(b"not read by these tests")
    rows = [_drift(f"c{i}", r) for i in range(4) for r in (None, "eu")]
    for w in range(3):
        start = W1 + w * HOUR
        store_drift_results(engine, "fraud", "1", (start, start + HOUR), rows[: 3 + w])
    for name in ("zeta", "alpha", "mid"):
        register_version(engine, name, "1", artifact)
    with transaction(engine) as session:
        for i in range(5):
            session.add(_alert(f"fp{i}", W1 + (i // 2) * HOUR))
    engine.dispose()
    return module_idle_server


def _alert(fingerprint: str, at: datetime) -> AlertState:
    return AlertState(
        fingerprint=fingerprint,
        rule="drift",
        labels={"model": "fraud"},
        annotations={},
        value=1.0,
        state="firing",
        active_since=at,
        last_active_at=at,
        fired_at=at,
        resolved_at=None,
        muted_by=None,
        updated_at=at,
    )


def _drift_key(r: dict[str, Any]) -> tuple[str, ...]:
    return (r["window_start"], r["column"], str(r["slice"]))


@pytest.mark.parametrize("limit", [1, 2, 4, 5000])
def test_drift_pages_cover_every_row_once_in_a_stable_order(
    seeded: ServerProcess, limit: int
) -> None:
    path = "/v1/models/fraud/drift"
    every = _get(seeded, path, since="2026-01-01T00:00:00Z", limit=5000).json()
    assert every["next_cursor"] is None
    assert len(every["results"]) == 3 + 4 + 5
    paged = _walk(seeded, path, "results", limit, since="2026-01-01T00:00:00Z")
    assert [_drift_key(r) for r in paged] == [_drift_key(r) for r in every["results"]]


def test_exactly_full_page_ends_with_a_null_cursor(seeded: ServerProcess) -> None:
    body = _get(seeded, "/v1/models/fraud/drift", limit=5).json()
    assert len(body["results"]) == 5 and body["next_cursor"] is None


def test_period_rows_page_too(seeded: ServerProcess) -> None:
    # Granularity rows are computed from summaries; the seeded results have none: an empty page.
    body = _get(seeded, "/v1/models/fraud/metrics", granularity="1d", limit=1).json()
    assert body == {"model": "fraud", "results": [], "next_cursor": None}


@pytest.mark.parametrize(
    ("path", "key", "ident"),
    [
        ("/v1/models", "models", lambda m: m["name"]),
        ("/v1/alerts", "alerts", lambda a: a["fingerprint"]),
    ],
)
def test_models_and_alerts_page(
    seeded: ServerProcess, path: str, key: str, ident: Callable[[Any], str]
) -> None:
    every = [ident(x) for x in _get(seeded, path).json()[key]]
    assert len(every) == (3 if key == "models" else 5)
    assert [ident(x) for x in _walk(seeded, path, key, 2)] == every


def test_alerts_newest_change_first_across_pages(seeded: ServerProcess) -> None:
    got = [a["fingerprint"] for a in _walk(seeded, "/v1/alerts", "alerts", 2)]
    assert got == ["fp4", "fp2", "fp3", "fp0", "fp1"]


def test_silences_page(seeded: ServerProcess) -> None:
    for i in range(3):
        body = {"matchers": [f"model=m{i}"], "author": "a", "comment": "c"}
        made = httpx.post(f"{seeded.url}/v1/silences", json=body, headers=auth("MW_T_ADMIN"))
        assert made.status_code == 201, made.text
    got = _walk(seeded, "/v1/silences", "silences", 2)
    assert [s["matchers"] for s in got] == [[f'model="m{i}"'] for i in range(3)]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/v1/models/fraud/drift", {"status": "bogus"}, "status"),
        ("/v1/models/fraud/metrics", {"status": "drift"}, "status"),
        ("/v1/models/fraud/drift", {"method": "nope"}, "method"),
        ("/v1/models/fraud/metrics", {"metric": "nope"}, "metric"),
        ("/v1/alerts", {"state": "bogus"}, "state"),
        ("/v1/models/fraud/drift", {"cursor": "garbage"}, "cursor"),
        ("/v1/models", {"limit": 0}, "limit"),
    ],
)
def test_bad_filters_are_422_validation_naming_the_field(
    seeded: ServerProcess, path: str, params: dict[str, Any], field: str
) -> None:
    resp = _get(seeded, path, **params)
    assert resp.status_code == 422, resp.text
    assert resp.json()["error"] == "validation"
    assert resp.json()["detail"].startswith(field) or f".{field}" in resp.json()["detail"]


def test_a_cursor_of_another_list_is_refused(seeded: ServerProcess) -> None:
    cursor = _get(seeded, "/v1/models", limit=1).json()["next_cursor"]
    resp = _get(seeded, "/v1/alerts", cursor=cursor)
    assert resp.status_code == 422 and "cursor" in resp.json()["detail"]


def test_error_names_come_from_one_vocabulary(seeded: ServerProcess) -> None:
    names = {
        httpx.get(f"{seeded.url}/v1/models").json()["error"],
        _get(seeded, "/v1/models/nope/drift").json()["error"],
        _get(seeded, "/v1/models/fraud/drift", since="2026-01-01T00:00:00").json()["error"],
        _get(seeded, "/v1/models/fraud/drift", status="x").json()["error"],
    }
    assert names == {"unauthorized", "not_found", "validation"}
