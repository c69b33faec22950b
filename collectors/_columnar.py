"""The fast path of validation: a batch of well-formed predictions checked column by column.

Most batches are entirely well formed. Checking them field by field across the whole batch
(type sets, membership, one numpy conversion of the event times) costs a fraction of checking
each event on its own. At the first doubt :func:`fast_table` returns None and the caller
validates the objects one by one (`collectors._validate`), which names the offending field in a
dead letter: both paths accept exactly the same events, and a property test holds them equal.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from collectors._base import DecodeError
from collectors._edge import (
    COLUMN_CHARS,
    DEFAULT_LIMITS,
    REQUEST_ID_CHARS,
    VERSION_CHARS,
    EdgeLimits,
    bad_text,
    longest,
    slice_fits,
)
from collectors._serving import serving_columns
from collectors._table import EventTable, transpose
from collectors._validate import MAX_TIMESTAMP, parse_timestamp

__all__ = ["fast_table"]

_FIELDS = itemgetter("request_id", "model", "model_version", "timestamp", "features", "prediction")
_NONE = type(None)
_VALUES = frozenset({int, float, str, bool, _NONE})
_PREDICTIONS = frozenset({int, float, str})
_NUMBERS = frozenset({int, float})


def fast_table(
    objs: Sequence[Any],
    origins: Sequence[int],
    models: Collection[str],
    slices: Sequence[str],
    limits: EdgeLimits = DEFAULT_LIMITS,
) -> EventTable | None:
    """The table of `objs` if every one is a well-typed prediction event whose strings
    storage takes (`collectors._edge`), else None."""
    if not objs or set(map(type, objs)) != {dict}:
        return None
    try:
        rid, model, version, ts, features, prediction = zip(*map(_FIELDS, objs), strict=True)
        if not set(model) <= set(models):
            return None
    except (KeyError, TypeError):  # a missing field; an unhashable model name
        return None
    times = _times(ts)
    if times is None or not (_names(rid) and _names(version)):
        return None
    if set(map(type, features)) != {dict} or not set(map(type, prediction)) <= _PREDICTIONS:
        return None
    if max(map(len, features)) > limits.max_features:
        return None
    if bad_text(rid, REQUEST_ID_CHARS) or bad_text(set(version), VERSION_CHARS):
        return None
    attrs = _attrs([o.get("metadata") for o in objs], slices)
    columns, present = transpose(features)
    types = {c: set(map(type, v)) for c, v in columns.items()}
    if attrs is None or not all(t <= _VALUES for t in types.values()):
        return None
    serving = serving_columns(objs, model, limits.generative)
    if serving is None:
        return None
    columns["prediction"] = list(prediction)
    types["prediction"] = set(map(type, prediction))
    if not _fits(columns, types, attrs, serving, limits):
        return None
    return EventTable(
        list(origins), list(rid), list(model), list(version), times, list(prediction),
        columns, attrs, types, present, serving,
    )  # fmt: skip


def _fits(
    columns: dict[str, list[Any]],
    types: dict[str, set[type]],
    attrs: dict[str, list[Any]],
    serving: dict[str, list[Any]],
    limits: EdgeLimits,
) -> bool:
    """Every column name, string value and slice value fits storage (`collectors._edge`)."""
    if bad_text(columns, COLUMN_CHARS):
        return False
    maps = [a for a in serving.get("attributions", ()) if a]
    if maps and (
        max(map(len, maps)) > limits.max_features or bad_text(set().union(*maps), COLUMN_CHARS)
    ):
        return False
    texts = [(c, v) for c, v in columns.items() if str in types[c]]
    texts += [(f"metadata.{c}", v) for c, v in attrs.items()]
    texts.append(("error", serving.get("error", [])))
    for name, values in texts:
        # Distinct values only: categorical columns repeat a few (their hashes are cached).
        strings = [v for v in set(values) if type(v) is str]
        most = longest(strings)
        if most > limits.max_value_chars:
            return False
        column = name.removeprefix("metadata.")
        if column in attrs and not column.startswith("prediction"):
            if not slice_fits(column, most):
                return False
    return True


def _names(values: Sequence[Any]) -> bool:
    """Every value a non-empty string."""
    return set(map(type, values)) == {str} and all(values)


def _times(values: Sequence[Any]) -> NDArray[np.float64] | None:
    kinds = set(map(type, values))
    if kinds <= _NUMBERS:
        times = np.array(values, dtype=np.float64)
    elif kinds == {str}:
        try:
            times = np.fromiter(map(parse_timestamp, values), np.float64, len(values))
        except DecodeError:
            return None
    else:
        return None
    if times.min() < 0 or times.max() >= MAX_TIMESTAMP:
        return None
    return times


def _attrs(metadata: list[Any], slices: Sequence[str]) -> dict[str, list[Any]] | None:
    """Slice attributes from metadata objects of scalars (or null/absent metadata)."""
    if not set(map(type, metadata)) <= {dict, _NONE}:
        return None
    present = [m for m in metadata if m]
    if present and not set(map(type, chain.from_iterable(m.values() for m in present))) <= _VALUES:
        return None
    if not present:
        return {c: [None] * len(metadata) for c in slices}
    return {c: [m.get(c) if m else None for m in metadata] for c in slices}
