"""The edge (`collectors._edge`): strings, counts and labels checked where events are decoded."""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors._base import DecodeError, LabelEvent, PredictionEvent
from collectors._cardinality import Cardinality, StoredNames
from collectors._edge import (
    COLUMN_CHARS,
    REQUEST_ID_CHARS,
    SLICE_KEY_CHARS,
    VERSION_CHARS,
    EdgeLimits,
    check_label,
    printable,
)
from collectors._table import EventTable
from collectors._validate import validate
from monitor.config import ModelConfig
from monitor.storage import LabeledPrediction, WindowCount, WindowProfile

LIMITS = EdgeLimits(max_features=5, max_value_chars=10, slices=("region",))
MODELS = {"fraud"}


def prediction(**over: Any) -> dict[str, Any]:
    base = {
        "request_id": "r1",
        "model": "fraud",
        "model_version": "1",
        "timestamp": 1767225600,
        "features": {"amount": 1.0, "country": "de"},
        "prediction": 0.5,
        "metadata": {"region": "eu"},
    }
    return {**base, **over}


def features(**extra: Any) -> dict[str, Any]:
    return prediction(features={"amount": 1.0, **extra})


def test_the_caps_are_the_storage_columns() -> None:
    profiles: Any = WindowProfile.__table__
    joined: Any = LabeledPrediction.__table__
    assert VERSION_CHARS == profiles.c.version.type.length == 100
    assert COLUMN_CHARS == profiles.c.column.type.length == 200
    assert SLICE_KEY_CHARS == profiles.c.slice_key.type.length
    assert REQUEST_ID_CHARS == joined.c.request_id.type.length
    # A model's name in config fits the `model` columns.
    assert ModelConfig.model_fields["name"].metadata[-1].max_length == profiles.c.model.type.length


@pytest.mark.parametrize("name", ["m" * 201, "fr\x00aud", "fr\x1baud"])
def test_a_model_name_storage_cannot_take_is_refused_in_config(name: str) -> None:
    with pytest.raises(ValidationError):
        ModelConfig(name=name)
    with pytest.raises(ValidationError):
        ModelConfig(name="m", slices=[name])


OK = {
    "version at the cap": prediction(model_version="v" * VERSION_CHARS),
    "request id at the cap": prediction(request_id="r" * REQUEST_ID_CHARS),
    "feature name at the cap": features(**{"f" * COLUMN_CHARS: 1.0}),
    "value at the cap": features(country="x" * 10),
    "empty string value": features(country=""),
    "features at the cap": prediction(features={f"f{i}": i for i in range(5)}),
    "non-ASCII": features(country="zürich 東京"),
    "control character in unstored metadata": prediction(metadata={"note": "a\x00"}),
    "empty feature name": features(**{"": 1.0}),
}

BAD = {
    "version cap+1": (prediction(model_version="v" * 101), "too_long", "model_version"),
    "request id cap+1": (prediction(request_id="r" * 201), "too_long", "request_id"),
    "feature name cap+1": (features(**{"f" * 201: 1.0}), "too_long", "features"),
    "value cap+1": (features(country="x" * 11), "too_long", "features.country"),
    "NUL feature name": (features(**{"a\x00": 1.0}), "control_character", "features"),
    "NUL version": (prediction(model_version="1\x00"), "control_character", "model_version"),
    "newline request id": (prediction(request_id="r\n"), "control_character", "request_id"),
    "tab value": (features(country="d\te"), "control_character", "features.country"),
    "DEL value": (features(country="de\x7f"), "control_character", "features.country"),
    "C1 value": (features(country="de\x9b"), "control_character", "features.country"),
    "lone surrogate": (features(country="\ud800"), "control_character", "features.country"),
    "string prediction": (prediction(prediction="p" * 11), "too_long", "prediction"),
    "features cap+1": (
        prediction(features={f"f{i}": i for i in range(6)}),
        "too_many_features",
        "features",
    ),
    "NUL slice value": (
        prediction(metadata={"region": "e\x00"}),
        "control_character",
        "metadata.region",
    ),
    "long slice value": (prediction(metadata={"region": "r" * 9}), None, None),
    "error field": (prediction(error="a\x00"), "control_character", "error"),
    "NUL attribution name": (
        prediction(attributions={"a\x00": 0.5}),
        "control_character",
        "attributions",
    ),
    "attributions cap+1": (
        prediction(attributions={f"f{i}": 0.5 for i in range(6)}),
        "too_many_features",
        "attributions",
    ),
    "NUL in a label": (
        {"request_id": "r1", "model": "fraud", "label": "\x00", "timestamp": 1767225600},
        "control_character",
        "label",
    ),
}


@pytest.mark.parametrize("obj", OK.values(), ids=OK.keys())
def test_strings_storage_takes_pass(obj: dict[str, Any]) -> None:
    assert isinstance(validate(obj, MODELS, LIMITS), PredictionEvent)


@pytest.mark.parametrize(("obj", "reason", "field"), BAD.values(), ids=BAD.keys())
def test_strings_storage_cannot_take_are_named(
    obj: dict[str, Any], reason: str | None, field: str | None
) -> None:
    if reason is None:  # within the caps
        validate(obj, MODELS, LIMITS)
        return
    with pytest.raises(DecodeError) as err:
        validate(obj, MODELS, LIMITS)
    assert err.value.reason == reason
    assert err.value.detail.startswith(f"{field}: ")
    assert printable(err.value.detail) == err.value.detail  # storable as it is


def test_a_slice_value_whose_key_would_not_fit_is_too_long() -> None:
    limits = EdgeLimits(max_value_chars=1000, slices=("region",))
    fits = prediction(metadata={"region": "r" * (SLICE_KEY_CHARS - 20)})
    assert isinstance(validate(fits, MODELS, limits), PredictionEvent)
    with pytest.raises(DecodeError, match="slice key must fit") as err:
        validate(prediction(metadata={"region": "r" * SLICE_KEY_CHARS}), MODELS, limits)
    assert err.value.reason == "too_long"


def test_a_bad_name_beside_a_type_error_is_shown_escaped() -> None:
    obj = features(**{"a\x00": [1]})
    with pytest.raises(DecodeError) as err:
        validate(obj, MODELS, LIMITS)
    assert "\x00" not in err.value.detail and "\\x00" in err.value.detail


def test_printable_escapes_every_control_character() -> None:
    assert printable("ok é") == "ok é"
    assert printable("a\x00b\x1f\x7f\x85\ud800") == "a\\x00b\\x1f\\x7f\\x85\\ud800"


LABELS: list[tuple[str, list[str], Any, bool]] = [
    ("classification", [], 0, True),
    ("classification", [], 1, True),
    ("classification", [], 1.0, True),
    ("classification", [], True, True),
    ("classification", [], False, True),
    ("classification", [], "1", True),
    ("classification", [], "yes", False),
    ("classification", [], 0.7, False),
    ("classification", [], 2, False),
    ("classification", [], "", False),
    ("classification", [], math.nan, False),
    ("multiclass", ["cat", "dog"], "cat", True),
    ("multiclass", ["cat", "dog"], "bird", False),
    ("multiclass", ["0", "1", "2"], 2, True),
    ("multiclass", [], "anything", True),
    ("multiclass", [], "", False),
    ("multiclass", [], 0.5, True),
    ("regression", [], 12.5, True),
    ("regression", [], -3, True),
    ("regression", [], math.inf, False),
    ("regression", [], -math.inf, False),
    ("regression", [], math.nan, False),
    ("regression", [], "12", False),
    ("regression", [], True, False),
]


@pytest.mark.parametrize(("task", "classes", "label", "ok"), LABELS)
def test_labels_are_checked_against_the_task(
    task: str, classes: list[str], label: Any, ok: bool
) -> None:
    if ok:
        check_label(label, task, classes, LIMITS)
        return
    with pytest.raises(DecodeError) as err:
        check_label(label, task, classes, LIMITS)
    assert err.value.reason == "invalid_label"
    assert err.value.detail.startswith(f"label: {label!r} is not a {task} label")


def test_a_label_event_checks_its_id() -> None:
    obj = {"request_id": "r" * 201, "model": "fraud", "label": 1, "timestamp": 1767225600}
    with pytest.raises(DecodeError, match="request_id"):
        validate(obj, MODELS, LIMITS)
    obj["request_id"] = "r1"
    assert isinstance(validate(obj, MODELS, LIMITS), LabelEvent)


def table(rows: list[tuple[str, str, float, dict[str, Any]]]) -> EventTable:
    events = [
        PredictionEvent(f"r{i}", model, version, ts, feats, 0.5)
        for i, (model, version, ts, feats) in enumerate(rows)
    ]
    return EventTable.from_events(events, list(range(len(events))), [])


def test_versions_past_the_window_cap_are_rejected_and_a_new_window_starts_afresh() -> None:
    caps = Cardinality(3600, 600, max_versions=2, max_columns=100)
    rows = [("m", v, 10.0, {"a": 1}) for v in ("1", "2", "3", "1")]
    over = caps.over(table(rows))
    assert {i: r.reason for i, r in over.items()} == {2: "too_many_versions"}
    assert "collect.max_versions_per_window" in over[2].detail
    assert caps.over(table([("m", "3", 3600.0, {"a": 1})])) == {}  # the next window
    assert caps.over(table([("other", "9", 10.0, {"a": 1})])) == {}  # another model


def test_columns_past_the_window_cap_reject_only_the_events_that_have_them() -> None:
    caps = Cardinality(3600, 600, max_versions=10, max_columns=3)  # prediction + 2
    over = caps.over(table([("m", "1", 10.0, {"a": 1}), ("m", "1", 10.0, {"b": 1, "c": 1})]))
    assert {i: r.reason for i, r in over.items()} == {1: "too_many_columns"}
    assert over[1].detail.startswith("features: name 'c'")
    assert caps.over(table([("m", "1", 20.0, {"a": 2, "b": 2})])) == {}  # known columns
    assert caps.over(table([("m", "2", 20.0, {"x": 1, "y": 1})])) == {}  # per version


class CountedStore:
    """What other processes stored, and how often the caps asked."""

    def __init__(self, versions: set[str], columns: set[str]) -> None:
        self.stored_versions, self.stored_columns = versions, columns
        self.reads = 0

    def versions(self, model: str, start: float) -> set[str]:
        self.reads += 1
        return set(self.stored_versions)

    def columns(self, model: str, version: str, start: float) -> set[str]:
        self.reads += 1
        return set(self.stored_columns)

    def prefetch(self, groups: object) -> None:
        return None


def test_the_caps_count_what_is_stored_reading_it_only_for_new_names() -> None:
    store = CountedStore({"1", "2"}, {"prediction", "a", "b"})
    caps = Cardinality(3600, 600, max_versions=3, max_columns=4, stored=store)
    over = caps.over(table([("m", v, 10.0, {"a": 1}) for v in ("2", "3", "4")]))
    assert {i: r.reason for i, r in over.items()} == {2: "too_many_versions"}
    over = caps.over(table([("m", "2", 10.0, {"c": 1}), ("m", "2", 10.0, {"d": 1})]))
    assert {i: r.reason for i, r in over.items()} == {1: "too_many_columns"}
    reads = store.reads
    for i in range(100):  # known names and names past a full cap: memory only
        caps.over(table([("m", "2", 10.0, {"a": i}), ("m", f"x{i}", 10.0, {"a": i})]))
        caps.over(table([("m", "2", 10.0, {f"e{i}": i})]))
    assert store.reads == reads


def test_names_stored_for_a_batch_s_windows_are_read_in_two_statements(engine: Engine) -> None:
    """A batch first meeting many models' windows reads their stored versions and columns
    with one select per table, and answers each window as its own read would."""

    def at(start: float) -> datetime:
        return datetime.fromtimestamp(start, UTC)

    stored = [("m1", "1", 60.0, ["a", "b", "__cbpe_score"]), ("m1", "2", 60.0, ["a"]),
              ("m2", "1", 120.0, ["c"])]  # fmt: skip
    with Session(engine) as session, session.begin():
        for model, version, start, columns in stored:
            span = {"window_start": at(start), "window_end": at(start + 60)}
            session.add(WindowCount(model=model, version=version, slice_key="", events=1, **span))
            for column in columns:
                session.add(WindowProfile(
                    model=model, version=version, slice_key="", column=column, kind="numeric",
                    n=1, payload=b"", **span,
                ))  # fmt: skip
    groups = [("m1", "1", 60.0), ("m1", "2", 60.0), ("m2", "1", 120.0), ("m3", "1", 60.0)]
    statements: list[str] = []
    listen = functools.partial(event.listen, engine, "before_cursor_execute")
    listen(lambda *args: statements.append(args[2]))
    names = StoredNames(engine)
    names.prefetch(groups)
    assert len(statements) == 2
    prefetched = {(m, s): names.versions(m, s) for m, _, s in groups}
    prefetched |= {g: names.columns(*g) for g in groups}
    assert len(statements) == 2
    fresh = StoredNames(engine)
    for model, version, start in groups:
        assert prefetched[(model, start)] == fresh.versions(model, start)
        assert prefetched[(model, version, start)] == fresh.columns(model, version, start)
    assert prefetched[("m1", "1", 60.0)] == {"a", "b"}  # derived columns are not counted
    assert prefetched[("m1", 60.0)] == {"1", "2"}
    assert prefetched[("m3", 60.0)] == set()
