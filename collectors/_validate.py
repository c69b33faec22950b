"""Validation of decoded objects into prediction and label events.

Reason codes (stored on dead letters): `missing_field`, `wrong_type`, `invalid_timestamp`,
`unknown_model`, `too_deep` (JSON nested deeper than MAX_DEPTH), `invalid_role`
(`collectors._serving`), and the edge's
`control_character`, `too_long`, `too_many_features` (`collectors._edge`); the planner adds
`future_timestamp`, `invalid_label`, `too_many_versions` and `too_many_columns`. Details name
the offending field, e.g. "features.amount: expected number, string, boolean or null, got list".
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from collectors._base import DecodeError, Event, LabelEvent, PredictionEvent
from collectors._edge import (
    DEFAULT_LIMITS,
    REQUEST_ID_CHARS,
    EdgeLimits,
    check_event,
    check_features,
    check_name,
    check_value,
)
from collectors._serving import serving_fields

_SCALARS = (int, float, str)  # bool is an int subclass: booleans are feature values too
MAX_TIMESTAMP = 32503680000  # the year 3000: later times are typos (ms for s)
# Exact types of feature and metadata values: the fast path of validation. Booleans are
# categorical ("true"/"false", as a pandas bool column of a baseline).
_SCALAR_TYPES = frozenset({int, float, str, bool, type(None)})
_SCALAR_OUT = frozenset({int, float, str})


MAX_DEPTH = 64  # no event needs deeper JSON; deeper is an attack or a bug upstream


def maybe_too_deep(payload: bytes) -> bool:
    """Whether `payload` has enough brackets to nest past MAX_DEPTH (one C-level byte scan)."""
    return payload.count(b"[") + payload.count(b"{") > MAX_DEPTH


def check_depth(payload: bytes, obj: object) -> None:
    """DecodeError `too_deep` if `obj` (decoded from `payload`) nests deeper than MAX_DEPTH.

    Counting brackets in the bytes is a C-level pass that clears almost every payload at once;
    only a payload with that many brackets has its decoded object walked.
    """
    if not maybe_too_deep(payload):
        return
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise DecodeError("too_deep", f"payload: JSON nested deeper than {MAX_DEPTH} levels")
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)


def _type_name(value: object) -> str:
    return {dict: "object", list: "array", bool: "boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _required_str(obj: dict[str, Any], name: str) -> str:
    value = obj.get(name)
    if value is None:
        raise DecodeError("missing_field", f"{name}: required")
    if not isinstance(value, str) or not value:
        raise DecodeError(
            "wrong_type", f"{name}: expected non-empty string, got {_type_name(value)}"
        )
    return value


def parse_timestamp(value: object) -> float:
    """RFC 3339 string or epoch seconds as epoch seconds; naive strings are refused."""
    if isinstance(value, bool) or value is None:
        raise DecodeError(
            "invalid_timestamp",
            f"timestamp: expected RFC 3339 or epoch seconds, got {_type_name(value)}",
        )
    if isinstance(value, int | float):
        ts = float(value)
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise DecodeError(
                "invalid_timestamp", f"timestamp: {value[:64]!r} is not RFC 3339"
            ) from None
        if parsed.tzinfo is None:
            raise DecodeError("invalid_timestamp", f"timestamp: {value[:64]!r} has no UTC offset")
        ts = parsed.timestamp()
    else:
        raise DecodeError("invalid_timestamp", f"timestamp: got {_type_name(value)}")
    if not 0 <= ts < MAX_TIMESTAMP:
        raise DecodeError("invalid_timestamp", f"timestamp: {value!r} is out of range")
    return ts


def _scalar_map(obj: dict[str, Any], name: str) -> dict[str, Any]:
    value = obj.get(name)
    if not isinstance(value, dict):
        raise DecodeError("wrong_type", f"{name}: expected object, got {_type_name(value)}")
    if _SCALAR_TYPES.issuperset(map(type, value.values())):
        return value
    for key, item in value.items():
        if item is not None and not isinstance(item, _SCALARS):
            raise DecodeError(
                "wrong_type",
                f"{name}.{key}: expected number, string, boolean or null, got {_type_name(item)}",
            )
    return value


def _check_prediction(value: object) -> object:
    if isinstance(value, bool) or value is None:
        raise DecodeError(
            "wrong_type", f"prediction: expected number, string or object, got {_type_name(value)}"
        )
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, dict) and "output" in value:
        out = value["output"]
        if isinstance(out, list) and out and all(_is_number(v) for v in out):
            return value
        if _is_number(out):
            return value
        raise DecodeError("wrong_type", "prediction.output: expected number or array of numbers")
    raise DecodeError(
        "wrong_type",
        f"prediction: expected number, string or {{output: ...}}, got {_type_name(value)}",
    )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_NUMBER = (int, float)


def validate(obj: object, models: Collection[str], limits: EdgeLimits = DEFAULT_LIMITS) -> Event:
    """One decoded object as a prediction or label event; DecodeError names what is wrong
    (`collectors._edge` checks the strings and counts storage would take)."""
    fast = _fast_prediction(obj, models, limits)
    event = fast if fast is not None else _validate(obj, models, limits)
    if isinstance(event, PredictionEvent):
        check_event(event, limits)
    else:
        check_name("request_id", event.request_id, REQUEST_ID_CHARS)
        check_value("label", event.label, limits)
    return event


def _fast_prediction(
    obj: Any, models: Collection[str], limits: EdgeLimits
) -> PredictionEvent | None:
    """The common case (well-typed prediction, epoch or RFC 3339 time) without detours."""
    if type(obj) is not dict:
        return None
    get = obj.get
    ts: Any
    model, rid, version, ts = (
        get("model"),
        get("request_id"),
        get("model_version"),
        get("timestamp"),
    )
    features, prediction, metadata = get("features"), get("prediction"), get("metadata")
    if (
        type(model) is not str
        or model not in models
        or type(rid) is not str
        or not rid
        or type(version) is not str
        or not version
        or type(features) is not dict
        or not _SCALAR_TYPES.issuperset(map(type, features.values()))
        or type(prediction) not in _SCALAR_OUT
    ):
        return None
    if metadata is None:
        metadata = {}
    elif type(metadata) is not dict or not _SCALAR_TYPES.issuperset(map(type, metadata.values())):
        return None
    if type(ts) in _NUMBER and 0 <= ts < MAX_TIMESTAMP:
        ts = float(ts)
    elif type(ts) is str:
        ts = parse_timestamp(ts)
    else:
        return None
    return PredictionEvent(
        rid, model, version, ts, features, prediction, metadata,
        serving_fields(obj, model in limits.generative),
    )  # fmt: skip


def _validate(obj: object, models: Collection[str], limits: EdgeLimits) -> Event:
    if not isinstance(obj, dict):
        raise DecodeError("wrong_type", f"event: expected a JSON object, got {_type_name(obj)}")
    model = _required_str(obj, "model")
    if model not in models:
        raise DecodeError("unknown_model", f"model: {model[:100]!r} is not configured")
    request_id = _required_str(obj, "request_id")
    if "timestamp" not in obj:
        raise DecodeError("missing_field", "timestamp: required")
    ts = parse_timestamp(obj["timestamp"])
    if "features" not in obj and "label" in obj:
        label = obj["label"]
        if label is None or isinstance(label, dict | list):
            raise DecodeError(
                "wrong_type", f"label: expected number, string or boolean, got {_type_name(label)}"
            )
        return LabelEvent(request_id, model, label, ts)
    version = obj.get("model_version")
    if isinstance(version, int) and not isinstance(version, bool):
        version = str(version)
    version = _required_str({"model_version": version}, "model_version")
    if "features" not in obj:
        raise DecodeError("missing_field", "features: required (or label for a label event)")
    if isinstance(obj["features"], dict):  # names first: a type error's detail shows one
        check_features("features", obj["features"], limits)
    features = _scalar_map(obj, "features")
    if "prediction" not in obj:
        raise DecodeError("missing_field", "prediction: required")
    prediction = _check_prediction(obj["prediction"])
    metadata = _scalar_map(obj, "metadata") if obj.get("metadata") is not None else {}
    serving = serving_fields(obj, model in limits.generative)
    return PredictionEvent(request_id, model, version, ts, features, prediction, metadata, serving)


def utc(ts: float) -> datetime:
    """Epoch seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(ts, UTC)
