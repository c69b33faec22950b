"""Slice keys: the one text form of a slice, shared by baselines, windows, results and labels.

A slice key is canonical JSON of ``{column: text}`` with sorted keys and no spaces, e.g.
``{"region":"eu"}``; the overall (all traffic) key is ``""``. Values become text one way only
(:func:`value_text`), so a baseline made from a pandas column and a window made from JSON events
meet on the same key:

| value | text |
| --- | --- |
| ``True`` / ``False`` (Python, numpy or JSON) | ``true`` / ``false`` |
| ``3``, ``3.0``, ``np.int64(3)`` | ``3`` (integral floats below 1e16 as integers) |
| ``0.25`` | ``0.25`` (shortest repr) |
| ``"eu"`` | ``eu`` |
| None, NaN | ``(null)`` |
| past a model's `max_slice_values` | ``(other)`` |

The display form (Prometheus labels, alert labels, Grafana) is ``col=text`` joined by ``,``.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Mapping
from typing import Any

import orjson

from monitor.errors import InputError

__all__ = [
    "NULL_VALUE",
    "OTHER_VALUE",
    "OVERALL",
    "key_of",
    "parse_slice_key",
    "slice_key",
    "slice_key_from_text",
    "slice_label",
    "value_text",
]

OVERALL = ""
NULL_VALUE = "(null)"
OTHER_VALUE = "(other)"
_EXACT_INT = 1e16  # beyond this a float is not an integer one would type


def value_text(value: Any) -> str | None:
    """The canonical text of a slice or category value; None for a null (None, NaN)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    item = getattr(value, "item", None)
    if item is not None and not isinstance(value, bool | int | float):
        value = item()  # numpy scalars
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer() and abs(value) < _EXACT_INT:
            return str(int(value))
        return repr(value)
    if value is _pandas_na():
        return None
    return str(value)


def _pandas_na() -> object:
    pandas = sys.modules.get("pandas")  # a pd.NA can only exist once pandas is imported
    return getattr(pandas, "NA", None) if pandas is not None else None


def key_of(values: Mapping[str, Any] | None) -> str:
    """The slice key of ``{column: value}`` (any value kinds); "" for None or empty."""
    if not values:
        return OVERALL
    texts = {str(c): value_text(v) for c, v in values.items()}
    canonical = {c: NULL_VALUE if t is None else t for c, t in texts.items()}
    return orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS).decode()


def slice_key(column: str, value: Any) -> str:
    """The slice key of one column's value, e.g. ``{"region":"eu"}``."""
    return key_of({column: value})


def parse_slice_key(key: str) -> dict[str, str] | None:
    """``{column: text}`` of a stored slice key; None for the overall key "".

    Accepts keys from before the one format (non-string values) by canonicalising them.
    """
    if key == OVERALL:
        return None
    try:
        data = orjson.loads(key)
    except orjson.JSONDecodeError:
        raise InputError(f"bad slice key {key[:200]!r}: not JSON") from None
    if not isinstance(data, dict) or not data:
        raise InputError(f"bad slice key {key[:200]!r}: not a JSON object")
    return {str(c): NULL_VALUE if (t := value_text(v)) is None else t for c, v in data.items()}


@functools.lru_cache(maxsize=4096)
def slice_label(key: str) -> str:
    """The display form of a slice key: '' for overall, else ``col=text`` joined by ','.

    Cached: a tick labels every stored result of a fleet (~126,000 of 1,000 models) with the
    few keys its configured slices have."""
    parsed = parse_slice_key(key)
    if parsed is None:
        return ""
    return ",".join(f"{c}={v}" for c, v in sorted(parsed.items()))


def slice_key_from_text(text: str) -> str:
    """The slice key a user typed: ``overall``, JSON (``{"region":"eu"}``) or ``col=value,...``.

    InputError (naming `slice`) when it is neither.
    """
    text = text.strip()
    if text in ("", "overall", "all"):
        return OVERALL
    if text.startswith("{"):
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise InputError(f"slice: not valid JSON: {text[:200]!r}") from None
        scalar = (str, int, float, bool, type(None))
        if not isinstance(parsed, dict) or not all(isinstance(v, scalar) for v in parsed.values()):
            raise InputError('slice: use a JSON object of values such as {"region":"eu"}')
        return key_of(parsed)
    pairs = [part.partition("=") for part in text.split(",")]
    if any(not name.strip() or not sep for name, sep, _ in pairs):
        raise InputError(f"slice: use col=value or a JSON object, not {text[:200]!r}")
    return key_of({name.strip(): value.strip() for name, _, value in pairs})
