"""Events and labels over HTTP: appended, drained, counted exactly once, dead-lettered, joined;
CloudEvents modes; backpressure."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import orjson
from sqlalchemy import func, select

from monitor.storage import (
    DeadLetter,
    IngestCounter,
    IntakeEntry,
    LabeledPrediction,
    WindowCount,
    WindowProfile,
    transaction,
)
from tests.monitor.app.daemon.conftest import ServerProcess, auth, db_engine

T0 = "2026-01-01T00:00:{:02d}Z"


def event(i: int, **over: Any) -> dict[str, Any]:
    base = {
        "request_id": f"r{i}",
        "model": "fraud",
        "model_version": "1",
        "timestamp": T0.format(i % 60),
        "features": {"amount": 10.0 + i, "country": "de" if i % 2 else "fr"},
        "prediction": 0.1 * (i % 10),
        "metadata": {"region": "eu" if i % 3 else "us"},
    }
    return {**base, **over}


def post(server: ServerProcess, body: Any, key: str | None = None, **kw: Any) -> httpx.Response:
    headers = {**auth("MW_T_INGEST"), **({"Idempotency-Key": key} if key else {})}
    headers.update(kw.pop("headers", {}))
    return httpx.post(f"{server.url}/v1/events", json=body, headers=headers, timeout=60, **kw)


def drained(tmp_path: Path, timeout: float = 30.0) -> None:
    """Wait until the drain has aggregated every appended request (no timing assertion)."""
    pending = select(func.count()).where(IntakeEntry.consumed_at.is_(None))
    deadline = time.monotonic() + timeout
    while True:
        with transaction(db_engine(tmp_path)) as s:
            left = s.scalar(pending)
        if left == 0:
            return
        assert time.monotonic() < deadline, f"{left} requests still pending in the intake log"
        time.sleep(0.05)


def totals(tmp_path: Path, source: str = "http") -> tuple[int, int, int]:
    drained(tmp_path)
    with transaction(db_engine(tmp_path)) as s:
        row = s.get(IngestCounter, source)
        assert row is not None
        return row.events, row.labels, row.dead_letters


def window_events(tmp_path: Path) -> int:
    drained(tmp_path)
    with transaction(db_engine(tmp_path)) as s:
        total = s.scalar(select(func.sum(WindowCount.events)).where(WindowCount.slice_key == ""))
    return int(total or 0)


def test_retried_post_with_idempotency_key_counts_once(
    server: ServerProcess, tmp_path: Path
) -> None:
    batch = [event(i) for i in range(5)] + [{**event(9), "timestamp": "yesterday"}]
    first = post(server, batch, key="batch-0001")
    assert first.status_code == 202, first.text
    assert first.json() == {
        "status": "accepted", "queued": 6, "duplicates": 0, "idempotency_key": "batch-0001",
        "dead_letters_url": "/v1/dead-letters?idempotency_key=batch-0001", "result": None,
    }  # fmt: skip
    again = post(server, batch, key="batch-0001")  # before or after the drain: a duplicate
    assert again.status_code == 202
    assert again.json() == {
        "status": "duplicate", "queued": 0, "duplicates": 6, "idempotency_key": "batch-0001",
        "dead_letters_url": "/v1/dead-letters?idempotency_key=batch-0001", "result": None,
    }  # fmt: skip
    assert totals(tmp_path) == (5, 0, 1)
    late_retry = post(server, batch, key="batch-0001")  # after the drain consumed it
    assert late_retry.json()["status"] == "duplicate"
    assert window_events(tmp_path) == 5
    with transaction(db_engine(tmp_path)) as s:
        dead = s.scalars(select(DeadLetter)).all()
        assert [(d.source, d.reason) for d in dead] == [("http", "invalid_timestamp")]
        assert b"yesterday" in dead[0].payload

    other = post(server, batch[:2], key="batch-0001")
    assert other.status_code == 409
    assert "already used for another body" in other.json()["detail"]


def test_without_a_key_every_post_counts_and_batch_id_is_a_key(
    server: ServerProcess, tmp_path: Path
) -> None:
    batch = [event(i) for i in range(3)]
    assert post(server, batch).json()["queued"] == 3
    assert post(server, batch).json()["queued"] == 3
    wrapped = {"events": [event(i) for i in range(10, 14)], "batch_id": "b-7"}
    assert post(server, wrapped).json()["queued"] == 4
    replay = post(server, wrapped).json()
    assert replay["queued"] == 0 and replay["idempotency_key"] == "b-7"
    single = post(server, event(20))  # one event object, not in an array
    assert single.status_code == 202 and single.json()["queued"] == 1
    assert totals(tmp_path)[0] == 11
    assert window_events(tmp_path) == 11


def test_malformed_events_are_dead_letters_and_bad_bodies_422(
    server: ServerProcess, tmp_path: Path
) -> None:
    batch = [
        event(1),
        {**event(2), "model": "nope"},
        {"features": {"a": 1}},
        17,
        {**event(3), "features": "not a mapping"},
    ]
    resp = post(server, batch).json()
    assert (resp["status"], resp["queued"]) == ("accepted", 5)
    assert totals(tmp_path) == (1, 0, 4)  # the drain dead-letters the four bad events
    with transaction(db_engine(tmp_path)) as s:
        reasons = sorted(s.scalars(select(DeadLetter.reason)).all())
    assert "unknown_model" in reasons and "missing_field" in reasons

    url = f"{server.url}/v1/events"
    headers = {**auth("MW_T_INGEST"), "content-type": "application/json"}
    broken = httpx.post(url, content=b"[{", headers=headers)
    assert broken.status_code == 422 and broken.json()["detail"].startswith("body: invalid JSON")
    shape = httpx.post(url, json="rows", headers=auth("MW_T_INGEST"))
    assert shape.status_code == 422 and "expected a JSON array" in shape.json()["detail"]
    not_list = httpx.post(url, json={"events": 3}, headers=auth("MW_T_INGEST"))
    assert not_list.status_code == 422 and not_list.json()["detail"].startswith("body.events")
    bad_key = post(server, [event(1)], key="has space")
    assert bad_key.status_code == 422 and bad_key.json()["detail"].startswith("Idempotency-Key")
    assert totals(tmp_path)[0] == 1


def test_ingest_scopes(server: ServerProcess) -> None:
    url = f"{server.url}/v1/events"
    assert httpx.post(url, json=[event(1)]).status_code == 401
    assert httpx.post(url, json=[event(1)], headers=auth("MW_T_READ")).status_code == 403
    labels = f"{server.url}/v1/labels"
    assert httpx.post(labels, json=[]).status_code == 401
    assert httpx.post(labels, json=[], headers=auth("MW_T_READ")).status_code == 403
    assert httpx.post(url, json=[event(1)], headers=auth("MW_T_ADMIN")).status_code == 202
    # The token is checked before anything else: a bad body or `wait` without one is a 401.
    assert httpx.post(url, content=b"{", params={"wait": "x"}).status_code == 401
    bad_key = post(server, [event(2)], key="has space")
    assert bad_key.status_code == 422 and bad_key.json()["detail"].startswith("Idempotency-Key")


def test_wait_outside_0_to_10_seconds_is_one_line_422(server: ServerProcess) -> None:
    for wait in ("-1", "10.5", "nan", "soon", ""):
        resp = post(server, [event(1)], key=f"w{wait}", params={"wait": wait})
        assert resp.status_code == 422, wait
        assert resp.json()["detail"].startswith("query.wait: must be a number"), wait
        labels = httpx.post(
            f"{server.url}/v1/labels",
            json=[{"request_id": "w", "model": "fraud", "label": 1, "timestamp": T0.format(30)}],
            headers=auth("MW_T_INGEST"),
            params={"wait": wait},
        )
        assert labels.status_code == 422, wait
        assert labels.json()["detail"].startswith("query.wait: must be a number"), wait
    ok = post(server, [event(1)], key="w0", params={"wait": "0"})
    assert ok.status_code == 202 and ok.json()["result"] is None
    assert ok.json()["status"] == "accepted" and ok.json()["queued"] == 1


def test_labels_are_joined_to_predictions(server: ServerProcess, tmp_path: Path) -> None:
    post(server, [event(i) for i in range(4)])
    labels = [
        {"request_id": f"r{i}", "model": "fraud", "label": i % 2, "timestamp": T0.format(30)}
        for i in range(3)
    ]
    url = f"{server.url}/v1/labels"
    resp = httpx.post(url, json={"labels": labels, "batch_id": "L1"}, headers=auth("MW_T_INGEST"))
    assert resp.status_code == 202, resp.text
    assert resp.json()["queued"] == 3
    again = httpx.post(url, json={"labels": labels, "batch_id": "L1"}, headers=auth("MW_T_INGEST"))
    assert again.json()["duplicates"] == 3 and again.json()["idempotency_key"] == "L1"
    # The same key on /v1/events is another batch: keys of the two endpoints are apart.
    assert post(server, [event(7)], key="L1").json()["queued"] == 1
    drained(tmp_path)
    with transaction(db_engine(tmp_path)) as s:
        joined = s.execute(select(LabeledPrediction.request_id, LabeledPrediction.label)).all()
    assert sorted(joined) == [("r0", 0), ("r1", 1), ("r2", 0)]
    assert totals(tmp_path)[1] == 3
    no_label = [{"request_id": "x", "model": "fraud"}]
    missing = httpx.post(url, json=no_label, headers=auth("MW_T_INGEST"))
    assert missing.status_code == 422
    assert missing.json()["errors"][0]["field"].endswith("label")


def _ce(pair: str, kind: str, data: Any) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": pair,
        "source": "kserve",
        "type": f"org.kubeflow.serving.inference.{kind}",
        "time": T0.format(5),
        "inferenceservicename": "fraud",
        "data": data,
    }


def test_cloudevents_binary_structured_and_batch(server: ServerProcess, tmp_path: Path) -> None:
    url = f"{server.url}/v1/events"
    binary = {
        **auth("MW_T_INGEST"),
        "content-type": "application/json",
        "ce-specversion": "1.0",
        "ce-id": "a",
        "ce-source": "kserve",
        "ce-time": T0.format(5),
        "ce-inferenceservicename": "fraud",
    }
    request = {"instances": [[12.5, 3.0]]}
    first = httpx.post(
        url, content=orjson.dumps(request),
        headers={**binary, "ce-type": "org.kubeflow.serving.inference.request"},
    )  # fmt: skip
    assert first.status_code == 202 and first.json()["queued"] == 1
    second = httpx.post(
        url, content=orjson.dumps({"predictions": [0.8]}),
        headers={**binary, "ce-type": "org.kubeflow.serving.inference.response"},
    )  # fmt: skip
    assert second.json()["queued"] == 1
    assert totals(tmp_path, "http-cloudevents")[0] == 1  # the request half waited for it

    structured = {**auth("MW_T_INGEST"), "content-type": "application/cloudevents+json"}
    req_b = orjson.dumps(_ce("b", "request", {"instances": [[1.0, 2.0]]}))
    assert httpx.post(url, content=req_b, headers=structured).json()["queued"] == 1
    batch = [_ce("b", "response", {"predictions": [0.1]}), _ce("c", "request", {})]
    batched = {**auth("MW_T_INGEST"), "content-type": "application/cloudevents-batch+json"}
    resp = httpx.post(url, content=orjson.dumps(batch), headers=batched).json()
    assert resp["queued"] == 2
    assert totals(tmp_path, "http-cloudevents") == (2, 0, 0)  # "c" waits for its response


def test_malformed_cloudevent_pairs_are_dead_letters(server: ServerProcess, tmp_path: Path) -> None:
    headers = {**auth("MW_T_INGEST"), "content-type": "application/cloudevents-batch+json"}
    pairs = {
        "scalar-instances": ({"instances": 5}, {"predictions": [1]}),
        "scalar-predictions": ({"instances": [[1.0]]}, {"predictions": 3}),
        "no-outputs": ({"instances": [[1.0]]}, {"outputs": []}),
        "unnamed-tensors": ({"inputs": [{"data": [1]}, {"data": [2]}]}, {"predictions": [1]}),
    }
    batch = [
        half for pid, (req, resp) in pairs.items()
        for half in (_ce(pid, "request", req), _ce(pid, "response", resp))
    ]  # fmt: skip
    resp = httpx.post(f"{server.url}/v1/events", content=orjson.dumps(batch), headers=headers)
    assert resp.status_code == 202, resp.text
    assert totals(tmp_path, "http-cloudevents") == (0, 0, 4)
    with transaction(db_engine(tmp_path)) as s:
        query = select(DeadLetter.reason).where(DeadLetter.source == "http-cloudevents")
        assert list(s.scalars(query)) == ["wrong_type"] * 4


def test_database_outage_is_503_soon(tmp_path: Path) -> None:
    from datetime import timedelta

    from fastapi.testclient import TestClient
    from prometheus_client import CollectorRegistry
    from sqlalchemy import text

    from collectors import HttpIntake, Ingestor
    from migrations import upgrade
    from monitor.app.daemon._app import create_app
    from monitor.app.daemon._common import DaemonState
    from monitor.config import parse_config
    from monitor.storage import make_engine

    engine = make_engine(f"sqlite:///{tmp_path / 'outage.db'}")
    upgrade(engine)
    token = {"name": "c", "scopes": ["ingest"], "token": "secret-ingest"}
    config = parse_config({"models": [{"name": "fraud"}], "api": {"tokens": [token]}})
    settings = config.collect.model_copy(update={"db_retry_timeout": timedelta(seconds=0.5)})
    intake = HttpIntake(
        engine,
        config,
        factory=lambda fmt: Ingestor(engine, "http", "http", config.models, settings, format=fmt),
    )
    app = create_app(DaemonState(engine, config, CollectorRegistry(), intake=intake))
    client = TestClient(app, raise_server_exceptions=False)
    headers = {"Authorization": "Bearer secret-ingest"}
    assert client.post("/v1/events", json=[event(1)], headers=headers).status_code == 202
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE intake_log"))
    down = client.post("/v1/events", json=[event(2)], headers=headers)
    assert down.status_code == 503 and down.headers["retry-after"] == "5"
    assert "intake log" in down.json()["detail"]
    intake.stop(5)


def test_configured_cloudevent_options_name_features_and_version(tmp_path: Path) -> None:
    from tests.conftest import run_cli
    from tests.monitor.app.daemon.conftest import write_config

    url = f"sqlite:///{tmp_path / 'mw.db'}"
    run_cli("db", "upgrade", "--database-url", url)
    extra = "  cloudevents: {model_version: '7', feature_names: [amount, age]}\n"
    config = write_config(tmp_path, url).read_text().replace("api:\n", "api:\n" + extra)
    (tmp_path / "mw.yaml").write_text(config)
    proc = ServerProcess(tmp_path / "mw.yaml")
    try:
        proc.wait_ready()
        halves = [
            _ce("p", "request", {"instances": [[12.5, 40]]}),
            _ce("p", "response", {"predictions": [0.9]}),
        ]
        headers = {**auth("MW_T_INGEST"), "content-type": "application/cloudevents-batch+json"}
        resp = httpx.post(f"{proc.url}/v1/events", content=orjson.dumps(halves), headers=headers)
        assert resp.json()["queued"] == 2
        assert totals(tmp_path, "http-cloudevents")[0] == 1
    finally:
        proc.terminate()
    with transaction(db_engine(tmp_path)) as s:
        query = select(WindowProfile.version, WindowProfile.column).where(
            WindowProfile.slice_key == ""
        )
        stored = sorted(s.execute(query).all())
    assert stored == [("7", "age"), ("7", "amount"), ("7", "prediction")]


def test_concurrent_retries_on_two_replicas_count_once(
    server: ServerProcess, tmp_path: Path
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    other = ServerProcess(tmp_path / "mw.yaml")  # a second replica on the same database
    try:
        other.wait_ready()
        batches = {f"k{j}": [event(100 * j + i) for i in range(20)] for j in range(3)}
        jobs = [(srv, key) for key in batches for srv in (server, other, server, other)]
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(lambda job: post(job[0], batches[job[1]], key=job[1]), jobs))
    finally:
        other.terminate()
    assert all(a.status_code == 202 for a in answers), [a.text for a in answers]
    accepted = sum(a.json()["queued"] for a in answers)
    duplicates = sum(a.json()["duplicates"] for a in answers)
    assert (accepted, duplicates) == (60, 180)
    assert totals(tmp_path)[0] == 60
    assert window_events(tmp_path) == 60


def test_huge_boolean_future_and_deeply_nested_events_never_500(
    server: ServerProcess, tmp_path: Path
) -> None:
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    batch = [
        event(40),
        event(41, features={"amount": 1e308, "country": "de"}),
        event(42, features={"amount": 1e200, "country": "fr", "is_new": True}),
        event(43, timestamp="2226-01-01T00:00:00Z"),  # 200 years ahead
        {**event(44), "extra": deep},
    ]
    resp = post(server, batch)
    assert resp.status_code == 202, resp.text
    assert totals(tmp_path) == (3, 0, 2)
    again = post(server, [event(45, features={"amount": -1.7e308, "country": "de"})])
    assert again.status_code == 202
    assert totals(tmp_path) == (4, 0, 2)  # the window is still writable
    with transaction(db_engine(tmp_path)) as s:
        reasons = sorted(s.scalars(select(DeadLetter.reason)).all())
    assert reasons == ["future_timestamp", "too_deep"]
