"""Which events of an HTTP ingest request were rejected: `dead_letters_url`, `GET /v1/dead-letters`
and `POST /v1/events?wait=`, against `modelwatch serve` on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from migrations import upgrade
from monitor.storage import make_engine
from tests.monitor.app.daemon.conftest import (
    ServerProcess,
    auth,
    migrated_url,
    post_until_drained,
    write_config,
)
from tests.monitor.app.daemon.test_api_ingest import event

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One `serve` per backend for the module's tests (each uses its own keys)."""
    directory = tmp_path_factory.mktemp(request.param)
    url = migrated_url(request.param, directory, request)
    proc = ServerProcess(write_config(directory, url))
    proc.wait_ready()
    try:
        yield proc.url
    finally:
        proc.terminate()


def post(base: str, body: Any, key: str | None = None, **params: Any) -> httpx.Response:
    headers = {**auth("MW_T_INGEST"), **({"Idempotency-Key": key} if key else {})}
    return httpx.post(f"{base}/v1/events", json=body, headers=headers, params=params, timeout=60)


def get(base: str, path: str, **params: Any) -> httpx.Response:
    url = httpx.URL(f"{base}{path}").copy_merge_params(params)
    return httpx.get(url, headers=auth("MW_T_READ"), timeout=30)


BAD = [
    event(0),
    {**event(1), "timestamp": "yesterday"},
    event(2),
    {**event(3), "model": "nope"},
    event(4),
    {**event(5), "features": "not a mapping"},
]


def test_wait_answers_counts_and_first_dead_letters_inline(served: str) -> None:
    resp = post(served, BAD, key="dl-wait-1", wait=10)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "accepted" and body["queued"] == 6
    assert body["dead_letters_url"] == "/v1/dead-letters?idempotency_key=dl-wait-1"
    result = body["result"]
    assert (result["events"], result["valid"], result["dead_letters"]) == (6, 3, 3)
    first = [(d["index"], d["reason"], d["field"]) for d in result["first_dead_letters"]]
    assert first == [
        (1, "invalid_timestamp", "timestamp"),
        (3, "unknown_model", "model"),
        (5, "wrong_type", "features"),
    ]
    # A retry with the same key waits for (here: finds) the same request's result.
    again = post(served, BAD, key="dl-wait-1", wait=10)
    assert again.status_code == 200
    assert again.json()["status"] == "duplicate" and again.json()["result"] == result


def test_dead_letters_url_lists_a_request_by_index_with_cursor(served: str) -> None:
    accepted = post(served, BAD, key="dl-url-1")
    assert accepted.status_code == 202 and accepted.json()["result"] is None
    post(served, [event(9)], key="dl-url-1-later", wait=10)  # the drain is past dl-url-1 now
    url = accepted.json()["dead_letters_url"]
    first = get(served, url, limit=2)
    assert first.status_code == 200, first.text
    page = first.json()
    assert (page["idempotency_key"], page["state"], page["events"]) == ("dl-url-1", "consumed", 6)
    assert [d["index"] for d in page["dead_letters"]] == [1, 3]
    assert page["dead_letters"][0]["source"] == "http"
    assert "yesterday" in page["dead_letters"][0]["detail"]
    rest = get(served, "/v1/dead-letters", idempotency_key="dl-url-1", limit=2,
               cursor=page["next_cursor"]).json()  # fmt: skip
    assert [d["index"] for d in rest["dead_letters"]] == [5] and rest["next_cursor"] is None
    clean = get(served, "/v1/dead-letters", idempotency_key="dl-url-1-later").json()
    assert clean["dead_letters"] == [] and clean["events"] == 1


def test_single_event_object_and_keyless_wait(served: str) -> None:
    one = post(served, event(30), wait=10)  # one event object, not in an array, no key
    assert one.status_code == 200, one.text
    body = one.json()
    assert body["queued"] == 1 and body["dead_letters_url"] is None
    assert body["result"] == {"events": 1, "valid": 1, "dead_letters": 0, "first_dead_letters": []}
    bad = post(served, {**event(31), "timestamp": "soon"}, wait=10).json()["result"]
    assert bad["dead_letters"] == 1 and bad["first_dead_letters"][0]["index"] == 0


def test_dead_letters_lookup_errors(served: str) -> None:
    unknown = get(served, "/v1/dead-letters", idempotency_key="never-posted")
    assert unknown.status_code == 404 and "never-posted" in unknown.json()["detail"]
    bad_key = get(served, "/v1/dead-letters", idempotency_key="has space")
    assert bad_key.status_code == 422 and bad_key.json()["detail"].startswith("Idempotency-Key")
    bad_cursor = get(served, "/v1/dead-letters", idempotency_key="x", cursor="nope")
    assert bad_cursor.status_code == 422 and bad_cursor.json()["detail"].startswith("cursor")
    ingest_only = httpx.get(
        f"{served}/v1/dead-letters", params={"idempotency_key": "x"}, headers=auth("MW_T_INGEST")
    )
    assert ingest_only.status_code == 403
    too_long = post(served, [event(1)], wait=10.5)
    assert too_long.status_code == 422 and too_long.json()["detail"].startswith("query.wait")


def test_labels_have_their_own_dead_letters_url(served: str) -> None:
    labels = [
        {"request_id": "r1", "model": "nope", "label": 1, "timestamp": "2026-01-01T00:00:00Z"}
    ]
    resp = post_until_drained(served, labels, "labels", key="dl-labels-1")
    url = resp.json()["dead_letters_url"]
    assert url == "/v1/dead-letters?idempotency_key=dl-labels-1&endpoint=labels"
    listed = get(served, url).json()["dead_letters"]
    assert [(d["index"], d["reason"]) for d in listed] == [(0, "unknown_model")]
    assert get(served, "/v1/dead-letters", idempotency_key="dl-labels-1").status_code == 404


def test_wait_past_its_bound_is_the_usual_202(tmp_path: Path) -> None:
    """A drain that cannot aggregate (its ingestor fails) never consumes the request."""
    from fastapi.testclient import TestClient
    from prometheus_client import CollectorRegistry

    from collectors import HttpIntake, Ingestor
    from monitor.app.daemon._app import create_app
    from monitor.app.daemon._common import DaemonState
    from monitor.config import parse_config

    engine = make_engine(f"sqlite:///{tmp_path / 'stuck.db'}")
    upgrade(engine)
    token = {"name": "c", "scopes": ["ingest"], "token": "secret-ingest"}
    config = parse_config({"models": [{"name": "fraud"}], "api": {"tokens": [token]}})

    def broken(adapter: str) -> Ingestor:
        raise RuntimeError("ingestor unavailable")

    intake = HttpIntake(engine, config, factory=broken)
    app = create_app(DaemonState(engine, config, CollectorRegistry(), intake=intake))
    client = TestClient(app)
    headers = {"Authorization": "Bearer secret-ingest", "Idempotency-Key": "stuck-1"}
    resp = client.post("/v1/events", params={"wait": 0.3}, json=[event(1)], headers=headers)
    assert resp.status_code == 202
    assert resp.json()["result"] is None and resp.json()["queued"] == 1
    intake.stop(1)
