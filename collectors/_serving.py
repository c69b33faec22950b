"""Operational fields of prediction events: latency, errors and attributions.

All optional: `latency_ms` (end to end) and the stage timings `queue_ms`, `preprocess_ms`,
`model_ms` (inference only; `model_latency_ms` is the same field under its older name),
`postprocess_ms` and `network_ms` (any subset), non-negative finite numbers or null; `error`,
a string or null (an errored request still counts as a request); `attributions`,
`{feature: finite number}` (e.g. SHAP values); `role`, `primary` or `shadow` (paired shadow
mode, `collectors._pairs`; anything else is an `invalid_role` dead letter). `model_ms` and
`model_latency_ms` set to different values on one event is a dead letter.

Measures (`monitor.common.measures`: time to first token, time per output token, tokens per
second, token counts, resource samples) come under their canonical name or any registered alias
(`gen_ai.server.time_to_first_token` in seconds is `ttft_ms` × 1000), non-negative finite
numbers or null, stored under the canonical name; two names of one measure with different values
is a dead letter (`wrong_type`), and a generative measure on a model not declared `generative`
is a dead letter (`not_generative`). Checked by both the per-event path (:func:`serving_fields`)
and the column-wise fast path (:func:`serving_columns`), which accept exactly the same events.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from collectors._base import DecodeError
from monitor.common.measures import ALIASES, MEASURES

__all__ = [
    "ROLES",
    "SERVING_FIELDS",
    "STAGE_FIELDS",
    "serving_columns",
    "serving_fields",
    "serving_from_events",
]

# Stage timings besides the model's, each stored as its own sketch (`ServingSummary.stages`).
STAGE_FIELDS = ("queue_ms", "preprocess_ms", "postprocess_ms", "network_ms")
SERVING_FIELDS = (
    "latency_ms", "model_latency_ms", *STAGE_FIELDS, "error", "attributions", "role",
)  # fmt: skip
ROLES = ("primary", "shadow")
_MODEL_ALIAS = "model_ms"  # accepted as `model_latency_ms`, the column it is stored in
_MEASURE_FIELDS = frozenset(ALIASES)
_FIELD_SET = frozenset((*SERVING_FIELDS, _MODEL_ALIAS, *_MEASURE_FIELDS))
_LATENCY = ("latency_ms", "model_latency_ms", *STAGE_FIELDS)
_NONE = type(None)


def _finite(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]


def _kind(value: object) -> str:
    return {dict: "object", list: "array", bool: "boolean", _NONE: "null"}.get(
        type(value), type(value).__name__
    )


def serving_fields(obj: dict[str, Any], generative: bool = False) -> dict[str, Any] | None:
    """The event's operational fields that are set (None if none); DecodeError names a bad one.
    `generative`: whether the event's model is declared generative (takes token measures)."""
    if _FIELD_SET.isdisjoint(obj) or all(obj.get(name) is None for name in _FIELD_SET):
        return None
    out: dict[str, Any] = {}
    for name in _LATENCY:
        value = obj.get(name)
        if value is None:
            continue
        if not _finite(value) or value < 0:
            raise DecodeError(
                "wrong_type", f"{name}: expected a non-negative finite number, got {value!r:.40}"
            )
        out[name] = float(value)
    error = obj.get("error")
    if error is not None and type(error) is not str:
        raise DecodeError("wrong_type", f"error: expected string or null, got {_kind(error)}")
    _model_alias(obj, out)
    if error is not None:
        out["error"] = error
    attributions = obj.get("attributions")
    if attributions is not None:
        out["attributions"] = _attributions(attributions)
    role = obj.get("role")
    if role is not None:
        out["role"] = _role(role)
    _measures(obj, out, generative)
    return out


def _measures(obj: dict[str, Any], out: dict[str, Any], generative: bool) -> None:
    """Each measure set under any of its names, in its canonical unit, into `out`."""
    seen: dict[str, str] = {}  # canonical name → the field that set it
    for name in sorted(_MEASURE_FIELDS.intersection(obj)):
        value = obj[name]
        if value is None:
            continue
        if not _nonnegative(value):
            raise DecodeError(
                "wrong_type", f"{name}: expected a non-negative finite number, got {value!r:.40}"
            )
        canonical, factor = ALIASES[name]
        if MEASURES[canonical].kind == "generative" and not generative:
            raise DecodeError(
                "not_generative",
                f"{name}: a generative measure, but the model is not declared generative",
            )
        scaled = float(value) * factor
        if not math.isclose(out.setdefault(canonical, scaled), scaled, rel_tol=1e-9):
            raise DecodeError(
                "wrong_type", f"{name}: differs from {seen[canonical]} (one measure, two names)"
            )
        seen.setdefault(canonical, name)


def _role(value: object) -> str:
    if value not in ROLES or type(value) is not str:
        shown = repr(value[:40]) if type(value) is str else _kind(value)
        raise DecodeError("invalid_role", f"role: expected 'primary' or 'shadow', got {shown}")
    return value


def _model_alias(obj: dict[str, Any], out: dict[str, Any]) -> None:
    """`model_ms` as `model_latency_ms`; both set to different values is a DecodeError."""
    value = obj.get(_MODEL_ALIAS)
    if value is None:
        return
    if not _finite(value) or value < 0:
        raise DecodeError(
            "wrong_type", f"model_ms: expected a non-negative finite number, got {value!r:.40}"
        )
    if out.setdefault("model_latency_ms", float(value)) != float(value):
        raise DecodeError(
            "wrong_type", "model_ms: differs from model_latency_ms (one field, two names)"
        )


def _attributions(value: object) -> dict[str, float]:
    if type(value) is not dict:
        raise DecodeError("wrong_type", f"attributions: expected object, got {_kind(value)}")
    for key, item in value.items():
        if not _finite(item):
            raise DecodeError(
                "wrong_type", f"attributions.{key}: expected a finite number, got {item!r:.40}"
            )
    return {k: float(v) for k, v in value.items()}


def serving_columns(
    objs: Sequence[dict[str, Any]],
    models: Sequence[str] = (),
    generative: Collection[str] = frozenset(),
) -> dict[str, list[Any]] | None:
    """Each set operational field as a column (None where absent) if all of them are valid,
    else None (the per-event path then names the bad one); {} when no event has any.
    `models`: each event's model; `generative`: the models declared generative."""
    if all(map(_FIELD_SET.isdisjoint, objs)):  # the common case, one C-level pass
        return {}
    out: dict[str, list[Any]] = {}
    for name in SERVING_FIELDS:
        values = [o.get(name) for o in objs]
        present = [v for v in values if v is not None]
        if not present:
            continue
        if not all(map(_valid[name], present)):
            return None
        out[name] = [_normal(name, v) for v in values]
    merged = _model_alias_column(objs, out)
    if merged is None or all(map(_MEASURE_FIELDS.isdisjoint, objs)):
        return merged
    return _measure_columns(objs, merged, models, generative)


def _measure_columns(
    objs: Sequence[dict[str, Any]],
    out: dict[str, list[Any]],
    models: Sequence[str],
    generative: Collection[str],
) -> dict[str, list[Any]] | None:
    """The measures as columns under their canonical names, checked column by column (the
    per-event rules); None if one value is bad (the per-event path then names it)."""
    allowed: list[bool] | None = None
    carried = set().union(*map(_MEASURE_FIELDS.intersection, objs))
    for name in sorted(carried):  # the per-event path's order: the same conflicts found
        canonical, factor = ALIASES[name]
        values = [o.get(name) for o in objs]
        present = [v for v in values if v is not None]
        if not present:
            continue
        if not all(map(_nonnegative, present)):
            return None
        if MEASURES[canonical].kind == "generative":
            if allowed is None:
                allowed = [m in generative for m in models] if models else [False] * len(objs)
            if not all(a for a, v in zip(allowed, values, strict=True) if v is not None):
                return None
        scaled = [None if v is None else float(v) * factor for v in values]
        column = out.get(canonical)
        if column is not None:
            if any(a is not None and b is not None and not math.isclose(a, b, rel_tol=1e-9)
                   for a, b in zip(column, scaled, strict=True)):  # fmt: skip
                return None
            scaled = [b if a is None else a for a, b in zip(column, scaled, strict=True)]
        out[canonical] = scaled
    return out


def _model_alias_column(
    objs: Sequence[dict[str, Any]], out: dict[str, list[Any]]
) -> dict[str, list[Any]] | None:
    """`model_ms` merged into the `model_latency_ms` column; None if one is bad or differs."""
    alias = [o.get(_MODEL_ALIAS) for o in objs]
    if all(v is None for v in alias):
        return out
    if not all(_nonnegative(v) for v in alias if v is not None):
        return None
    column = out.get("model_latency_ms") or [None] * len(objs)
    merged = [m if a is None else float(a) for a, m in zip(alias, column, strict=True)]
    if any(m is not None and a is not None and m != a for a, m in zip(alias, column, strict=True)):
        return None
    out["model_latency_ms"] = merged
    return out


def _normal(name: str, value: Any) -> Any:
    if value is None or name in ("error", "role"):
        return value
    if name == "attributions":
        return {k: float(v) for k, v in value.items()}
    return float(value)


def _nonnegative(value: Any) -> bool:
    return _finite(value) and value >= 0


_valid = {
    **{name: _nonnegative for name in _LATENCY},
    "error": lambda v: type(v) is str,
    "attributions": lambda v: type(v) is dict and all(map(_finite, v.values())),
    "role": lambda v: type(v) is str and v in ROLES,
}


def serving_from_events(serving: Sequence[Any]) -> dict[str, list[Any]]:
    """Columns of the per-event path's `PredictionEvent.serving` mappings (None: none set)."""
    out: dict[str, list[Any]] = {}
    for name in (*SERVING_FIELDS, *MEASURES):
        values = [s.get(name) if s else None for s in serving]
        if any(v is not None for v in values):
            out[name] = values
    return out
