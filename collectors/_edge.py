"""The edge: every string and count of an event checked before anything is stored.

One bad string in storage stops everyone: PostgreSQL refuses a NUL character in text and a value
longer than its column, so one such event would fail its whole batch, again after every retry
and restart. Validation (`collectors._validate`, and the column-wise fast path
`collectors._columnar`) therefore checks here, per event, everything that reaches a table:

| what | cap | reason code |
| --- | --- | --- |
| any string stored (see below) | no control character, no lone surrogate | `control_character` |
| `model_version` | the `version` column (:data:`VERSION_CHARS`) | `too_long` |
| `request_id` | the `request_id` column (:data:`REQUEST_ID_CHARS`) | `too_long` |
| feature name | the `column` column (:data:`COLUMN_CHARS`) | `too_long` |
| slice value | its slice key fits the `slice_key` column (:data:`SLICE_KEY_CHARS`) | `too_long` |
| string value, label | `collect.max_value_chars` | `too_long` |
| features of one event | `collect.max_features_per_event` | `too_many_features` |
| `role` (paired shadow mode) | `primary` or `shadow` (`collectors._serving`) | `invalid_role` |
| generative measure (`ttft_ms`, ...) | a model declared `generative` | `not_generative` |

Strings stored: version, request id, feature names, string values, slice values, labels and
`error`. Control characters are U+0000-U+001F and U+007F-U+009F.
The column sizes are read from the storage models, so a migration that widens a column widens
the cap. Details name the field and show a bad name escaped (``repr``), never raw.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String

from collectors._base import DecodeError, PredictionEvent
from monitor.outcomes import class_of
from monitor.profiles import slice_key
from monitor.storage import LabeledPrediction, WindowProfile

__all__ = [
    "COLUMN_CHARS",
    "DEFAULT_LIMITS",
    "REQUEST_ID_CHARS",
    "SLICE_KEY_CHARS",
    "VERSION_CHARS",
    "EdgeLimits",
    "bad_text",
    "longest",
    "check_event",
    "check_features",
    "check_label",
    "check_name",
    "check_slice",
    "check_value",
    "printable",
    "safe_text",
    "slice_fits",
]


def _length(column: Any) -> int:
    kind = column.type
    assert isinstance(kind, String) and kind.length is not None
    return kind.length


_PROFILES: Any = WindowProfile.__table__
_JOINED: Any = LabeledPrediction.__table__
VERSION_CHARS = _length(_PROFILES.c.version)
COLUMN_CHARS = _length(_PROFILES.c.column)
SLICE_KEY_CHARS = _length(_PROFILES.c.slice_key)
REQUEST_ID_CHARS = _length(_JOINED.c.request_id)

# C0 and C1 controls, DEL, and lone surrogates (which no database encoding can store).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class EdgeLimits:
    """The configurable caps (`collect.max_features_per_event`, `collect.max_value_chars`),
    the slice columns of every model (their values become slice keys) and the models declared
    `generative` (the only ones whose events may carry generative measures)."""

    max_features: int = 1000
    max_value_chars: int = 1000
    slices: tuple[str, ...] = ()
    generative: frozenset[str] = frozenset()


DEFAULT_LIMITS = EdgeLimits()


def longest(values: Sequence[str]) -> float:
    """The length of the longest of `values` (strings), infinite if one holds a control
    character: the fast path's check of a whole column (C-level passes over one join)."""
    if not values:
        return 0
    joined = "".join(values)
    if not joined.isprintable() and _CONTROL.search(joined) is not None:
        return math.inf  # isprintable() is the cheap test; it also refuses e.g. U+00A0
    return max(map(len, values))


def bad_text(values: Iterable[str], limit: int) -> bool:
    """Whether any of `values` is longer than `limit` or holds a control character."""
    return longest(list(values)) > limit


def _problem(value: str, limit: int) -> str | None:
    if len(value) <= limit and value.isprintable():  # the common case, one C-level pass
        return None
    if len(value) > limit:
        return f"{len(value)} characters, more than {limit}"
    bad = _CONTROL.search(value)
    if bad is not None:
        return f"control character U+{ord(bad.group()):04X} at position {bad.start()}"
    return None


def _raise(field: str, problem: str, setting: str) -> None:
    reason = "control_character" if problem.startswith("control") else "too_long"
    where = f" ({setting})" if reason == "too_long" else ""
    raise DecodeError(reason, f"{field}: {problem}{where}")


def check_name(field: str, value: str, limit: int) -> None:
    """DecodeError unless `value` (an id, a version) fits its column of `limit` characters."""
    problem = _problem(value, limit)
    if problem is not None:
        _raise(field, problem, "the size of its storage column")


def check_value(field: str, value: object, limits: EdgeLimits) -> None:
    """DecodeError unless a string value is short enough and free of control characters."""
    if type(value) is str:
        problem = _problem(value, limits.max_value_chars)
        if problem is not None:
            _raise(field, problem, "collect.max_value_chars")


def check_features(name: str, values: Mapping[str, Any], limits: EdgeLimits) -> None:
    """Checks the count, names and string values of `features`."""
    if len(values) > limits.max_features:
        raise DecodeError(
            "too_many_features",
            f"{name}: {len(values)} features, more than {limits.max_features} "
            "(collect.max_features_per_event)",
        )
    if bad_text(values, COLUMN_CHARS):
        for key in values:
            problem = _problem(key, COLUMN_CHARS)
            if problem is not None:
                _raise(f"{name}: name {safe_text(key)}", problem, "the size of its storage column")
    strings = [v for v in values.values() if type(v) is str]
    if bad_text(strings, limits.max_value_chars):
        for key, value in values.items():
            check_value(f"{name}.{key}", value, limits)


def check_slice(field: str, column: str, value: object) -> None:
    """DecodeError unless the slice key of a string value fits the `slice_key` column."""
    if type(value) is str and len(slice_key(column, value)) > SLICE_KEY_CHARS:
        raise DecodeError(
            "too_long",
            f"{field}: a slice value of {len(value)} characters; its slice key must fit "
            f"{SLICE_KEY_CHARS} characters",
        )


def check_event(event: PredictionEvent, limits: EdgeLimits) -> None:
    """DecodeError naming the first string of a prediction event that storage cannot take."""
    check_name("request_id", event.request_id, REQUEST_ID_CHARS)
    check_name("model_version", event.version, VERSION_CHARS)
    check_features("features", event.features, limits)
    check_value("prediction", event.prediction, limits)
    for column in limits.slices:
        attr = event.metadata.get(column)
        check_value(f"metadata.{column}", attr, limits)
        check_slice(f"metadata.{column}", column, attr)
        check_slice(f"features.{column}", column, event.features.get(column))
    if event.serving:
        check_value("error", event.serving.get("error"), limits)
        attributions = event.serving.get("attributions")
        if attributions:  # stored per feature name (`window_serving.attributions`)
            check_features("attributions", attributions, limits)


def slice_fits(column: str, longest: float) -> bool:
    """Whether every value of a slice column, the longest of `longest` characters, surely
    fits the `slice_key` column (the fast path's check; JSON may double a character)."""
    return 2 * longest + len(column) + 8 <= SLICE_KEY_CHARS


def printable(text: str) -> str:
    """`text` with any control character escaped (a dead letter's detail must be storable
    whatever a detail quoted)."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(
        lambda m: m.group().encode("unicode_escape", "backslashreplace").decode(), text
    )


def safe_text(value: str, limit: int = 64) -> str:
    """`value` quoted and escaped for a detail or a log line (no control character, bounded)."""
    return repr(value[:limit]) + ("..." if len(value) > limit else "")


# Binary labels: booleans, 0 and 1 (integers, floats, or those as strings "0"/"1").
_BINARY = frozenset({0, 1})


def check_label(label: object, task: str, classes: Collection[str], limits: EdgeLimits) -> None:
    """DecodeError `invalid_label` unless `label` is a label of the model's task.

    Binary classification: true/false, 0/1 (or "0"/"1"). Multiclass: a class (a non-empty
    string or an integer) among `outcomes.classes` when configured. Regression: a finite number.
    """
    if type(label) is str:
        check_value("label", label, limits)
    if task == "classification":
        ok = type(label) is bool or (_number(label) and label in _BINARY) or label in ("0", "1")
        expected = "true, false, 0 or 1"
    elif task == "multiclass":
        named = class_of(label)
        ok = named is not None and (not classes or named in classes)
        expected = "one of " + ", ".join(sorted(classes)) if classes else "a class name or number"
    else:
        ok = _number(label) and math.isfinite(label)  # type: ignore[arg-type]
        expected = "a finite number"
    if not ok:
        shown = safe_text(label) if isinstance(label, str) else repr(label)
        raise DecodeError("invalid_label", f"label: {shown} is not a {task} label ({expected})")


def _number(value: object) -> bool:
    return type(value) in (int, float)
