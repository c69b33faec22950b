"""Fuzzing the decoders: whatever a source delivers, planning never raises and loses nothing.

Arbitrary JSON-ish payloads (random nesting and types, unicode with control characters and lone
surrogates, huge, NaN and infinite numbers, long strings, many keys, broken bytes), alone and
mixed into batches of good events, go through `Planner.plan` for every input format and both
validation paths (the column-wise fast path and event by event). Every record is either accepted
or a dead letter with a reason and a detail naming what is wrong; every good event of a batch is
accepted whatever its neighbours; both paths plan the same.
"""

from __future__ import annotations

import base64
import math
import re
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors._adapters import make_adapter
from collectors._base import DecodeError, RawRecord
from collectors._edge import DEFAULT_LIMITS, check_label, printable
from collectors._plan import Plan, Planner
from monitor.config import ModelConfig
from monitor.config._monitoring import OutcomeConfig
from tests.collectors.conftest import T0, event
from tests.collectors.test_columnar import summary
from tests.fuzzing import JSONISH, NUMBERS, SCALARS, TEXT, encode, fuzz, mutated

MODELS = {
    "fraud": ModelConfig(name="fraud", slices=["region"]),
    "kind": ModelConfig(
        name="kind", outcomes=OutcomeConfig(task="multiclass", classes=["cat", "dog"])
    ),
    "price": ModelConfig(name="price", outcomes=OutcomeConfig(task="regression")),
}
FORMATS = {
    "modelwatch": {},
    "sagemaker": {"model": "fraud", "model_version": "1"},
    "cloudevents": {"model": "fraud"},
}


def planner(format_name: str = "modelwatch", columnar: bool = True) -> Planner:
    adapter = make_adapter(format_name, FORMATS[format_name])
    return Planner(adapter, MODELS, 600, 120, 4096, columnar=columnar, clock=lambda: T0 + 600)


CELLS = st.one_of(NUMBERS.map(str), TEXT, st.sampled_from(["", " ", "nan", "inf", "1e999", '"']))
CSV = st.lists(st.lists(CELLS, max_size=4).map(",".join), max_size=3).map("\n".join)


@st.composite
def capture_part(draw: st.DrawFn) -> Any:
    """One side of a SageMaker capture: CSV, JSON or BASE64 data, right or wrong."""
    encoding = draw(st.sampled_from(["CSV", "JSON", "BASE64", "csv", "", "UTF-16"]))
    data: Any = draw(st.one_of(CSV, JSONISH.map(lambda o: encode(o).decode("utf-8", "replace"))))
    if encoding == "BASE64":
        data = draw(
            st.sampled_from([base64.b64encode(data.encode("utf-8", "replace")).decode(), data])
        )
    part = {"data": data, "encoding": encoding}
    part["observedContentType"] = draw(st.sampled_from(["text/csv", "application/json", ""]))
    return draw(st.one_of(st.just(part), JSONISH))


@st.composite
def sagemaker_capture(draw: st.DrawFn) -> Any:
    meta = {"eventId": draw(st.one_of(TEXT, JSONISH)), "inferenceTime": draw(SCALARS)}
    if draw(st.booleans()):
        meta["inferenceTime"] = "2026-01-01T00:05:00Z"
    capture = {"endpointInput": draw(capture_part()), "endpointOutput": draw(capture_part())}
    return {"captureData": capture, "eventMetadata": draw(st.one_of(st.just(meta), JSONISH))}


def tensor(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries({"name": TEXT, "data": values}) | JSONISH


@st.composite
def cloudevent_pair(draw: st.DrawFn) -> list[Any]:
    """A KServe/Seldon request and response CloudEvent (same id), bodies right or wrong."""
    pair_id = draw(st.one_of(st.just("a"), TEXT, JSONISH))
    when = draw(st.one_of(st.just("2026-01-01T00:05:00Z"), SCALARS))
    data = st.one_of(JSONISH, st.lists(st.lists(NUMBERS, max_size=3), max_size=3))
    request = draw(
        st.fixed_dictionaries({"instances": data})
        | st.fixed_dictionaries({"inputs": st.lists(tensor(data), max_size=3)})
        | JSONISH
    )
    response = draw(
        st.fixed_dictionaries({"predictions": data})
        | st.fixed_dictionaries({"outputs": st.lists(tensor(data), max_size=3)})
        | JSONISH
    )
    return [
        {
            "id": pair_id,
            "type": f"org.kubeflow.serving.inference.{kind}",
            "time": when,
            "data": body,
        }
        for kind, body in (("request", request), ("response", response))
    ]


PAYLOADS = st.one_of(
    mutated(sorted(MODELS)).map(encode),
    JSONISH.map(encode),
    st.binary(max_size=40),
    mutated(sorted(MODELS)).map(lambda o: encode(o)[: len(encode(o)) // 2]),
    st.sampled_from([b"", b"[]", b"{}", b"null", b"[" * 80 + b"]" * 80, b"\xff{}", b" " * 5000]),
)
BAD_RECORDS = st.lists(PAYLOADS, min_size=1, max_size=8)
# What each format's own structure looks like, broken in every part.
SHAPED = {
    "modelwatch": st.lists(mutated(sorted(MODELS)).map(encode), min_size=1, max_size=8),
    "sagemaker": st.lists(sagemaker_capture().map(encode), min_size=1, max_size=8),
    "cloudevents": st.lists(cloudevent_pair(), min_size=1, max_size=4).map(
        lambda pairs: [encode(half) for pair in pairs for half in pair]
    ),
}


def records(payloads: list[bytes]) -> list[RawRecord]:
    return [RawRecord("p0", i, i + 1, p) for i, p in enumerate(payloads)]


def assert_all_accounted(plan: Plan, native: bool = True) -> None:
    """Every record is accepted (an event, a label, a waiting half) or a described dead letter.

    `native`: the records are in modelwatch's format, where a payload that is not an array is
    one event, so the outcomes can be counted record by record."""
    for _, rejection in plan.dead:
        assert re.fullmatch("[a-z0-9_]+", rejection.reason) and rejection.detail, rejection
    dead = {r.start for r, _ in plan.dead}
    assert len(dead) == len(plan.dead), "a record dead-lettered twice"
    accepted = {plan.records[o].start for o in plan.table.origin}
    assert not accepted & dead, "a record both accepted and dead"
    if native and not any(map(_array, plan.records)):  # one event per record: count them
        outcomes = len(plan.dead) + plan.events + plan.late + len(plan.labels)
        assert outcomes == len(plan.records), "a record unaccounted for"


def _array(record: RawRecord) -> bool:
    """Whether a record's payload is a JSON array (several events, accepted or refused whole)."""
    try:
        return type(orjson.loads(record.payload)) is list
    except orjson.JSONDecodeError:
        return False


@fuzz(300)
@given(st.sampled_from(sorted(FORMATS)), st.data())
def test_no_payload_makes_planning_raise(format_name: str, data: st.DataObject) -> None:
    payloads = data.draw(st.one_of(BAD_RECORDS, SHAPED[format_name]))
    for columnar in (True, False):
        plan = planner(format_name, columnar).plan(records(payloads), {})
        assert_all_accounted(plan, native=format_name == "modelwatch")


@fuzz(200)
@given(BAD_RECORDS, st.integers(1, 20), st.randoms(use_true_random=False))
def test_good_events_among_bad_ones_are_all_accepted(bad: list[bytes], good: int, rng: Any) -> None:
    # Stamped just before the latest time the planner takes (its clock plus 300 s): no fuzzed
    # event can raise the watermark far enough past them to make them late.
    goods = [orjson.dumps(event(10_000 + i, ts=T0 + 880 + i)) for i in range(good)]
    mixed = goods + bad
    rng.shuffle(mixed)
    for columnar in (True, False):
        plan = planner(columnar=columnar).plan(records(mixed), {})
        assert_all_accounted(plan)
        assert {f"r{10_000 + i}" for i in range(good)} <= set(plan.table.request_id)


@fuzz(200)
@given(BAD_RECORDS, st.integers(0, 10))
def test_the_fast_path_and_event_by_event_validation_agree(bad: list[bytes], good: int) -> None:
    mixed = [orjson.dumps(event(i)) for i in range(good)] + bad
    fast = planner(columnar=True).plan(records(mixed), {})
    reference = planner(columnar=False).plan(records(mixed), {})
    assert summary(fast) == summary(reference)


@fuzz(300)
@given(
    JSONISH,
    st.sampled_from(["classification", "multiclass", "regression"]),
    st.lists(st.sampled_from(["cat", "dog", "0", "1", "é"]), max_size=3),  # as config allows
)
def test_a_label_is_accepted_or_refused_with_a_reason(label: Any, task: str, classes: Any) -> None:
    try:
        check_label(label, task, classes, DEFAULT_LIMITS)
    except DecodeError as err:
        assert err.reason in {"invalid_label", "too_long", "control_character"}
        assert err.detail.startswith("label: ")
        assert printable(err.detail) == err.detail
    else:
        if task == "regression":
            assert type(label) in (int, float) and math.isfinite(label)


def test_a_sagemaker_csv_output_row_that_is_not_numbers_is_a_dead_letter() -> None:
    """Found by the fuzzing: a multi-cell CSV output row with a non-number (here an empty
    cell) raised ValueError out of planning, failing its whole batch on every retry."""
    part = {"data": "", "encoding": "CSV", "observedContentType": "text/csv"}
    capture = {"endpointInput": part, "endpointOutput": {**part, "data": "0,"}}
    line = {"captureData": capture, "eventMetadata": {"eventId": "e", "inferenceTime": T0}}
    good = {
        **line,
        "captureData": {
            "endpointInput": {**part, "data": "1"},
            "endpointOutput": {**part, "data": "0.5"},
        },
    }
    plan = planner("sagemaker").plan(records([orjson.dumps(line), orjson.dumps(good)]), {})
    assert [(r.start, j.reason) for r, j in plan.dead] == [(0, "wrong_type")]
    assert "endpointOutput.data" in plan.dead[0][1].detail
    assert plan.events == 1


def test_a_sagemaker_csv_with_carriage_returns_is_rows_or_a_dead_letter() -> None:
    """Found by the fuzzing: a bare CR in CSV data made `csv.reader` raise out of planning,
    failing its whole batch on every retry. A CR now ends a row, as in a text-mode CSV file."""
    part = {"data": "1,2\r3,4", "encoding": "CSV", "observedContentType": "text/csv"}
    capture = {"endpointInput": part, "endpointOutput": {**part, "data": "0.1\r0.9"}}
    line = {"captureData": capture, "eventMetadata": {"eventId": "e", "inferenceTime": T0}}
    plan = planner("sagemaker").plan(records([orjson.dumps(line)]), {})
    assert plan.dead == [] and plan.events == 2
    uneven = {**capture, "endpointOutput": {**part, "data": "0.1"}}  # 2 inputs, 1 output
    plan = planner("sagemaker").plan(records([orjson.dumps({**line, "captureData": uneven})]), {})
    assert [j.reason for _, j in plan.dead] == ["wrong_type"] and plan.events == 0


@pytest.mark.parametrize("data", ["\x80", "not base64!", "gA=="])  # non-ASCII, junk, not UTF-8
def test_sagemaker_base64_data_that_does_not_decode_is_a_dead_letter(data: str) -> None:
    """Found by the fuzzing: non-ASCII text as BASE64 data raised ValueError out of planning."""
    part = {"data": "1", "encoding": "CSV", "observedContentType": "text/csv"}
    capture = {
        "endpointInput": part,
        "endpointOutput": {**part, "data": data, "encoding": "BASE64"},
    }
    line = {"captureData": capture, "eventMetadata": {"eventId": "e", "inferenceTime": T0}}
    plan = planner("sagemaker").plan(records([orjson.dumps(line)]), {})
    assert [(j.reason, j.detail) for _, j in plan.dead] == [
        ("wrong_type", "endpointOutput.data: invalid BASE64")
    ]


def test_a_cloudevent_pair_without_instances_is_a_dead_letter() -> None:
    """Found by the fuzzing: a pair with no instances and no predictions vanished silently
    (no event, no dead letter), where an empty modelwatch payload is an `empty` dead letter."""
    time = "2026-01-01T00:05:00Z"
    pair = [
        {"id": "a", "type": f"org.kubeflow.serving.inference.{kind}", "time": time, "data": data}
        for kind, data in (("request", {"instances": []}), ("response", {"predictions": []}))
    ]
    plan = planner("cloudevents").plan(records([orjson.dumps(half) for half in pair]), {})
    assert [(j.reason, j.detail) for _, j in plan.dead] == [
        ("empty", "cloudevent a: no instances or inputs")
    ]
