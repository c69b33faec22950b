"""Fuzzing the ingest routes of a running daemon with what schemathesis does not send.

`test_api_schema.py` sends every route schema-shaped and schema-violating requests; this module
sends `POST /v1/events` and `POST /v1/labels` the payloads of the decoder fuzzing
(`tests.fuzzing`): control characters and lone surrogates (as JSON escapes), NaN, numbers past
64 bits, thousands of features, broken bytes, every body shape and content type, with good
events mixed in. No answer is a 5xx, none takes longer than `REQUEST_TIMEOUT`, each waited-for
request accounts for every event, and no good event is ever a dead letter; the daemon still
answers `/healthz` and counts a good batch afterwards.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzzing import JSONISH, SCALARS, TEXT, encode, fuzz, mutated
from tests.monitor.app.daemon.conftest import ServerProcess, auth

# A waited-for request answers within `wait` (10 s) plus the time to say so.
REQUEST_TIMEOUT = 20.0
_ids = itertools.count()


@pytest.fixture(scope="module")
def server(module_server: ServerProcess) -> ServerProcess:
    return module_server


def good_event() -> dict[str, Any]:
    """A valid `fraud` event stamped now (after any fuzzed time, so never late)."""
    return {
        "request_id": f"good-{next(_ids)}",
        "model": "fraud",
        "model_version": "1",
        "timestamp": time.time(),
        "features": {"amount": 12.5, "country": "de"},
        "prediction": 0.25,
        "metadata": {"region": "eu"},
    }


def send(server: ServerProcess, path: str, body: bytes, **headers: str) -> httpx.Response:
    """POST `body`; a connection error or `REQUEST_TIMEOUT` fails the test (a hang)."""
    headers = {**auth("MW_T_INGEST"), "content-type": "application/json", **headers}
    response = httpx.post(
        f"{server.url}{path}", content=body, headers=headers, timeout=REQUEST_TIMEOUT
    )
    assert response.status_code < 500, (path, body[:300], response.status_code, response.text)
    assert "Traceback" not in response.text
    return response


EVENTS = mutated(("fraud",), ts=1_767_225_600.0).map(lambda e: json.loads(encode(e)))


@fuzz(40)
@given(st.lists(EVENTS, max_size=6), st.integers(1, 4), st.randoms(use_true_random=False))
def test_good_events_among_fuzzed_ones_are_all_counted(
    server: ServerProcess, bad: list[Any], good: int, rng: random.Random
) -> None:
    goods = [good_event() for _ in range(good)]
    batch = [*bad, *goods]
    rng.shuffle(batch)
    body = encode(batch)
    response = send(server, "/v1/events?wait=10", body)
    if response.status_code == 422:  # not JSON (NaN, a lone surrogate): refused whole, said so
        assert b"NaN" in body or b"Infinity" in body or b"\\ud" in body, response.text
        return
    assert response.status_code == 200, response.text  # drained within the wait
    result = response.json()["result"]
    assert result["events"] == len(batch)
    assert result["valid"] + result["dead_letters"] == len(batch)
    dead = {d["index"] for d in result["first_dead_letters"]}
    good_rows = {i for i, e in enumerate(batch) if e in goods}
    assert not dead & good_rows, result["first_dead_letters"]
    assert result["valid"] >= good


CONTENT_TYPES = [
    {"content-type": "application/json"},
    {"content-type": "application/cloudevents+json"},
    {"content-type": "application/cloudevents-batch+json"},
    {"content-type": "text/plain"},
    {"ce-id": "a", "ce-type": "x.inference.request", "ce-time": "2026-01-01T00:00:00Z"},
]
BODIES = st.one_of(
    st.binary(max_size=64),
    JSONISH.map(encode),
    st.lists(EVENTS, max_size=4).map(encode),
    st.fixed_dictionaries({"events": JSONISH, "batch_id": SCALARS}).map(encode),
    st.sampled_from([b"", b"[" * 2000 + b"]" * 2000, b'{"events": "x"}', b"\xff\xfe"]),
)


@fuzz(40)
@given(BODIES, st.sampled_from(CONTENT_TYPES), st.one_of(st.none(), TEXT))
def test_no_event_body_gets_a_server_error(
    server: ServerProcess, body: bytes, headers: dict[str, str], key: str | None
) -> None:
    extra = dict(headers)
    # else httpx refuses to send it (non-ASCII, control characters, edge whitespace: b" ")
    if key is not None and key.isascii() and key.isprintable() and key.strip() == key != "":
        extra["idempotency-key"] = key
    send(server, "/v1/events", body, **extra)


LABELS = st.fixed_dictionaries(
    {"request_id": TEXT, "model": st.sampled_from(["fraud", "x"]), "label": JSONISH},
    optional={"timestamp": SCALARS},
)


@fuzz(30)
@given(st.one_of(st.lists(LABELS, max_size=4), st.fixed_dictionaries({"labels": JSONISH})))
def test_no_label_body_gets_a_server_error(server: ServerProcess, body: Any) -> None:
    send(server, "/v1/labels", encode(body))


def test_after_fuzzing_the_daemon_answers_and_counts_a_good_batch(server: ServerProcess) -> None:
    """Last in the module: whatever the fuzzing sent, nothing is stuck behind it."""
    assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
    goods = [good_event() for _ in range(5)]
    response = send(server, "/v1/events?wait=10", encode(goods))
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert (result["events"], result["valid"], result["dead_letters"]) == (5, 5, 0)
    assert server.proc.poll() is None
