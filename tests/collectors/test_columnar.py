"""The column-wise fast path plans every batch exactly as validating event by event does."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors._adapters import make_adapter
from collectors._base import RawRecord
from collectors._plan import KeyState, Plan, Planner
from monitor.config import ModelConfig
from tests.collectors.conftest import T0, event
from tests.properties import examples

MODELS = {
    "fraud": ModelConfig(name="fraud", slices=["region", "country"], max_slice_values=3),
    "churn": ModelConfig(name="churn", slices=["tier"]),
}


def planner(columnar: bool, chunk: int = 2000) -> Planner:
    adapter = make_adapter("modelwatch")
    return Planner(adapter, MODELS, 600, 120, 4096, columnar=columnar, chunk=chunk)


def _set(path: str, value: Any) -> Any:
    def change(e: dict[str, Any]) -> Any:
        *parents, last = path.split(".")
        target = e
        for name in parents:
            target = target[name]
        target[last] = value
        return e

    return change


def _drop(name: str) -> Any:
    return lambda e: {k: v for k, v in e.items() if k != name}


TROUBLE = {
    "string amount": _set("features.amount", "12"),
    "boolean feature": _set("features.amount", True),
    "array feature": _set("features.amount", [1]),
    "object feature": _set("features.amount", {"a": 1}),
    "no request_id": _drop("request_id"),
    "empty request_id": _set("request_id", ""),
    "no version": _drop("model_version"),
    "integer version": _set("model_version", 2),
    "no features": _drop("features"),
    "no prediction": _drop("prediction"),
    "RFC 3339 time": _set("timestamp", "2026-01-01T00:10:00+00:00"),
    "naive time": _set("timestamp", "2026-01-01T00:00:00"),
    "negative time": _set("timestamp", -5),
    "time in ms": _set("timestamp", T0 * 1000),
    "boolean time": _set("timestamp", True),
    "bad time": _set("timestamp", "soon"),
    "label": lambda e: {"request_id": "r3", "model": "fraud", "label": 1, "timestamp": T0},
    "multi-output": _set("prediction", {"output": [0.1, 0.9]}),
    "output object": _set("prediction", {"output": 0.3}),
    "string prediction": _set("prediction", "spam"),
    "boolean prediction": _set("prediction", False),
    "null metadata": _set("metadata", None),
    "numeric slice": _set("metadata", {"region": 3}),
    "integral float slice": _set("metadata", {"region": 3.0}),
    "boolean slice": _set("metadata", {"region": True}),
    "boolean slice feature": _set("features.country", False),
    "huge feature": _set("features.amount", 1e308),
    "future time": _set("timestamp", T0 + 200 * 365 * 86400),
    "nested metadata": _set("metadata", {"x": [1]}),
    "unknown model": _set("model", "unknown"),
    "numeric model": _set("model", 7),
    "fewer features": _set("features", {"amount": 1.5}),
    "not an object": lambda e: [1, 2],
    "array of events": lambda e: [e, event(10_000, ts=e["timestamp"])],
    "latency": _set("latency_ms", 12.5),
    "integer latency": _set("model_latency_ms", 7),
    "zero latency": _set("latency_ms", 0),
    "negative latency": _set("latency_ms", -1),
    "boolean latency": _set("latency_ms", True),
    "string latency": _set("latency_ms", "12"),
    "null latency": _set("latency_ms", None),
    "stage timing": _set("queue_ms", 3.5),
    "negative stage timing": _set("network_ms", -0.5),
    "model_ms alias": _set("model_ms", 4),
    "model_ms differing": lambda e: {**e, "model_ms": 4.0, "model_latency_ms": 5.0},
    "error": _set("error", "timeout"),
    "numeric error": _set("error", 500),
    "attributions": _set("attributions", {"amount": -0.25, "country": 1}),
    "string attribution": _set("attributions", {"amount": "high"}),
    "array attributions": _set("attributions", [0.1]),
    # The edge (collectors._edge): strings storage cannot take, counts past the caps.
    "NUL feature name": lambda e: {**e, "features": {**e["features"], "a\x00b": 1.0}},
    "long feature name": lambda e: {**e, "features": {**e["features"], "f" * 201: 1.0}},
    "feature name at the cap": lambda e: {**e, "features": {**e["features"], "f" * 200: 1.0}},
    "long version": _set("model_version", "v" * 101),
    "version at the cap": _set("model_version", "v" * 100),
    "control version": _set("model_version", "1\n"),
    "long request_id": _set("request_id", "r" * 201),
    "DEL request_id": _set("request_id", "r\x7f"),
    "C1 categorical": _set("features.country", "de\x85"),
    "long categorical": _set("features.country", "x" * 1001),
    "categorical at the cap": _set("features.country", "x" * 1000),
    "long string prediction": _set("prediction", "p" * 1001),
    "tab error": _set("error", "bad\tgateway"),
    "long slice value": _set("metadata", {"region": "r" * 490}),
    "control slice value": _set("metadata", {"region": "eu\x00"}),
    "NUL label": lambda e: {"request_id": "r3", "model": "fraud", "label": "\x00", "timestamp": T0},
    "NUL attribution name": _set("attributions", {"a\x00": 0.5}),
    "too many features": lambda e: {**e, "features": {f"f{i}": i for i in range(1001)}},
    "features at the cap": lambda e: {**e, "features": {f"f{i}": i for i in range(1000)}},
}


def variant(rng: random.Random, i: int, trouble: float) -> Any:
    """A valid event, or (at rate `trouble`) one of the ways real traffic goes wrong or differs."""
    ts = T0 + i * rng.choice([1, 7, 40]) - rng.choice([0, 0, 0, 2000])  # some arrive late
    base = event(i, ts=ts, model=rng.choice(["fraud", "fraud", "churn"]))
    base["features"]["country"] = rng.choice(["de", "fr", "us", "it", "es", None])
    base["features"]["score"] = rng.choice([1, 2.5, None, "high"])  # mixed kinds in a column
    if rng.random() >= trouble:
        return base
    return rng.choice(list(TROUBLE.values()))(base)


def payload(rng: random.Random, obj: Any, trouble: float) -> bytes:
    data = orjson.dumps(obj)
    roll = rng.random() * 0.04 / max(trouble, 1e-9)
    if roll < 0.02:
        return data[: len(data) // 2]  # truncated JSON
    if roll < 0.03:
        return b"\xff" + data
    if roll < 0.04:
        return data + b" " * 5000  # oversized
    return data


def batch(rng: random.Random, n: int, trouble: float) -> list[RawRecord]:
    records = []
    offsets = {"p0": 0, "p1": 0}
    for i in range(n):
        key = rng.choice(list(offsets))
        start = offsets[key]
        offsets[key] += 1
        records.append(
            RawRecord(key, start, start + 1, payload(rng, variant(rng, i, trouble), trouble))
        )
    return records


def summary(plan: Plan) -> dict[str, Any]:
    """What a plan will write, in a form two plans can be compared by."""
    windows = {}
    for wkey, window in plan.windows.items():
        for slice_key, rows in window.slices.items():
            picked = range(len(window)) if rows is None else rows.tolist()
            columns = sorted({**window.columns, **window.serving}.items())
            windows[(*wkey, slice_key)] = sorted(
                (window.origin[i], *(f"{c}={v[i]!r}" for c, v in columns)) for i in picked
            )
    return {
        "windows": windows,
        "dead": sorted((r.key, r.start, j.reason, j.detail) for r, j in plan.dead),
        "labels": [(e.request_id, e.model, e.label, e.ts) for e in plan.labels],
        "end": {k: (s.offset, s.watermark) for k, s in plan.end.items()},
        "counts": (plan.events, plan.late, plan.skipped),
        "join": list(
            zip(plan.table.request_id, plan.table.version, plan.table.prediction, strict=True)
        ),
    }


@settings(max_examples=examples(80), deadline=None)
@given(st.randoms(use_true_random=False), st.integers(1, 120), st.sampled_from([0.0, 0.01, 0.3]))
def test_fast_path_plans_like_event_by_event_validation(
    rng: random.Random, n: int, trouble: float
) -> None:
    records = batch(rng, n, trouble)
    stored = {"p0": KeyState(0, T0 + 500)}
    fast, reference = planner(True).plan(records, stored), planner(False).plan(records, stored)
    assert summary(fast) == summary(reference)


@settings(max_examples=examples(40), deadline=None)
@given(
    st.randoms(use_true_random=False),
    st.integers(1, 150),
    st.sampled_from([0.0, 0.02, 0.3]),
    st.integers(1, 40),
)
def test_a_batch_planned_in_chunks_is_planned_as_a_whole(
    rng: random.Random, n: int, trouble: float, chunk: int
) -> None:
    records = batch(rng, n, trouble)
    stored = {"p1": KeyState(0, T0 + 900)}
    chunked = planner(True, chunk).plan_chunked(records, stored)
    whole = planner(True).plan(records, stored)
    a, b = summary(chunked), summary(whole)
    a["labels"], b["labels"] = sorted(a["labels"], key=repr), sorted(b["labels"], key=repr)
    assert a == b


@pytest.mark.parametrize("kind", sorted(TROUBLE))
def test_one_odd_event_in_a_clean_batch_is_planned_like_event_by_event(kind: str) -> None:
    records = [RawRecord("p0", i, i + 1, orjson.dumps(event(i))) for i in range(30)]
    odd = TROUBLE[kind](event(30))
    records.insert(15, RawRecord("p1", 0, 1, orjson.dumps(odd)))
    fast, reference = planner(True).plan(records, {}), planner(False).plan(records, {})
    assert summary(fast) == summary(reference)


def test_a_clean_batch_takes_the_fast_path_and_a_bad_event_does_not_cost_its_neighbours() -> None:
    records = [RawRecord("p0", i, i + 1, orjson.dumps(event(i))) for i in range(50)]
    clean = planner(True).plan(records, {})
    assert (clean.events, clean.dead) == (50, [])
    assert sum(len(w) for w in clean.windows.values()) == 50
    bad = event(50)
    bad["features"]["amount"] = [1]
    records.append(RawRecord("p0", 50, 51, orjson.dumps(bad)))
    mixed = planner(True).plan(records, {})
    assert mixed.events == 50
    assert [(r.start, j.reason, j.detail) for r, j in mixed.dead] == [
        (50, "wrong_type", "features.amount: expected number, string, boolean or null, got array")
    ]


def test_replayed_records_are_skipped_by_both_paths() -> None:
    records = [RawRecord("p0", i, i + 1, orjson.dumps(event(i))) for i in range(20)]
    for columnar in (True, False):
        plan = planner(columnar).plan(records, {"p0": KeyState(12, None)})
        assert (plan.events, plan.skipped, plan.end["p0"].offset) == (8, 12, 20)
        assert sorted(o for w in plan.windows.values() for o in w.origin) == list(range(12, 20))


def test_a_window_profiles_only_the_columns_its_own_events_have() -> None:
    fraud = [event(i) for i in range(10)]
    churn = [event(100 + i, model="churn") for i in range(10)]
    for e in churn:
        e["features"] = {"tenure": 12, "plan": "gold"}
    fraud[3]["features"]["note"] = None  # an explicit null is a column of its window
    records = [RawRecord("p0", i, i + 1, orjson.dumps(e)) for i, e in enumerate(fraud + churn)]
    for columnar in (True, False):
        plan = planner(columnar).plan(records, {})
        columns = {key[0]: sorted(w.columns) for key, w in plan.windows.items()}
        assert columns == {
            "fraud": ["amount", "country", "note", "prediction"],
            "churn": ["plan", "prediction", "tenure"],
        }


def test_boolean_and_integer_slice_values_are_different_slices() -> None:
    values: list[object] = [1, True, 1.0, False, 0, "true"]
    records = [
        RawRecord("p0", i, i + 1, orjson.dumps(event(i, metadata={"region": v})))
        for i, v in enumerate(values)
    ]
    for columnar in (True, False):
        (window,) = planner(columnar).plan(records, {}).windows.values()
        counts = {k: window.count(k) for k in window.slices if k.startswith('{"region"')}
        assert counts == {
            '{"region":"1"}': 2,
            '{"region":"true"}': 2,
            '{"region":"false"}': 1,
            '{"region":"(other)"}': 1,  # 0: past max_slice_values=3
        }
