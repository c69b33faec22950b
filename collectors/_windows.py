"""Windowing a batch's table: lateness, tumbling event-time windows, and slices within them.

An event is late when its window closed (window end + allowed lateness) at or before the
watermark of its partition/file, the highest event time seen there before it. Windows are
`[start, start + size)` by event time. Slices are per configured column: the event's metadata
attribute, or else its feature of that name; events with neither are in the `(null)` slice (as
nulls are in a baseline); values past a model's `max_slice_values` share the `(other)` slice.
Keys are written by `monitor.profiles.slice_key`, the one slice-key format.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np
from numpy.typing import NDArray

from collectors._table import EventTable
from monitor.config import ModelConfig
from monitor.profiles import NULL_VALUE, OTHER_VALUE, slice_key, value_text

__all__ = ["GroupKey", "SliceValues", "WindowBatch", "WindowKey", "late_rows", "split_windows"]

# (model, version, window_start epoch seconds)
WindowKey = tuple[str, str, float]
# (model, version, window_start epoch seconds, slice_key)
GroupKey = tuple[str, str, float, str]
Rows = NDArray[np.intp] | None  # positions within a window; None: all of them


@dataclass
class WindowBatch:
    """A batch's events of one (model, version, window): columns, and rows per slice key."""

    origin: list[int]  # record index of each event
    columns: dict[str, list[Any]]
    types: dict[str, set[type]]
    slices: dict[str, Rows]  # "" (all traffic) first, then one key per slice value
    # Numeric columns as float64 (None as NaN), converted while the chunk is in cache.
    arrays: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    # Operational fields (`collectors._serving`) some event of the window set; None where unset.
    serving: dict[str, list[Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.origin)

    def count(self, slice_key: str) -> int:
        """Events in one slice of this window."""
        rows = self.slices[slice_key]
        return len(self) if rows is None else len(rows)

    @classmethod
    def concat(cls, parts: Sequence[tuple[WindowBatch, int]]) -> WindowBatch:
        """One window of consecutive parts, each with the shift of its record indices."""
        if len(parts) == 1 and parts[0][1] == 0:
            return parts[0][0]
        names = list(dict.fromkeys(c for w, _ in parts for c in w.columns))
        keys = list(dict.fromkeys(k for w, _ in parts for k in w.slices))
        starts = np.cumsum([0] + [len(w) for w, _ in parts[:-1]])
        return cls(
            origin=[o + shift for w, shift in parts for o in w.origin],
            columns={c: list(chain.from_iterable(_column(w, c) for w, _ in parts)) for c in names},
            types={c: set().union(*(w.types.get(c, {_NONE}) for w, _ in parts)) for c in names},
            slices={k: _rows([w for w, _ in parts], starts, k) for k in keys},
            arrays={
                c: np.concatenate([w.arrays[c] for w, _ in parts])
                for c in names
                if all(c in w.arrays for w, _ in parts)
            },
            serving={
                c: list(chain.from_iterable(w.serving.get(c) or [None] * len(w) for w, _ in parts))
                for c in dict.fromkeys(c for w, _ in parts for c in w.serving)
            },
        )


_NONE = type(None)
_NUMERIC = frozenset({int, float, _NONE})


def _column(window: WindowBatch, name: str) -> list[Any]:
    values = window.columns.get(name)
    return [None] * len(window) if values is None else values


def _rows(parts: list[WindowBatch], starts: NDArray[np.intp], key: str) -> Rows:
    """A slice's rows in the concatenation of `parts` (which start at `starts`)."""
    if all(w.slices.get(key, ()) is None for w in parts):
        return None
    pieces = []
    for window, start in zip(parts, starts.tolist(), strict=True):
        rows = window.slices.get(key, np.empty(0, dtype=np.intp))
        pieces.append((np.arange(len(window)) if rows is None else rows) + start)
    return np.concatenate(pieces).astype(np.intp)


class SliceValues:
    """Bounded slice values per (model, column): past the cap a value becomes "(other)"."""

    def __init__(self, models: Mapping[str, ModelConfig]) -> None:
        self.models = models
        self.known: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.keys: dict[tuple[str, str, object], str] = {}

    def key(self, model: str, column: str, value: object) -> str:
        """The slice key (`monitor.profiles.slice_key`) of one value (None: the null slice)."""
        cached = self.keys.get((model, column, value))
        if cached is None:
            cached = slice_key(column, self._bucket(model, column, value))
            if len(self.keys) > 100_000:  # bounded memory with high-cardinality values
                self.keys.clear()
            self.keys[(model, column, value)] = cached
        return cached

    def _bucket(self, model: str, column: str, value: object) -> str:
        text = value_text(value)
        text = NULL_VALUE if text is None else text
        seen = self.known[(model, column)]
        if text in seen:
            return text
        if len(seen) >= self.models[model].max_slice_values:
            return OTHER_VALUE
        seen.add(text)
        return text


def late_rows(
    table: EventTable,
    row_keys: Sequence[str],
    watermarks: dict[str, float | None],
    window_s: float,
    lateness_s: float,
) -> NDArray[np.bool_]:
    """Which events are late; raises each key's watermark in `watermarks` as events pass."""
    late = np.zeros(len(table), dtype=bool)
    closes = (np.floor(table.ts / window_s) + 1) * window_s + lateness_s
    index = {k: i for i, k in enumerate(dict.fromkeys(row_keys))}
    codes = np.fromiter(map(index.__getitem__, row_keys), np.intp, len(row_keys))
    for key, code in index.items():
        rows = np.flatnonzero(codes == code) if len(index) > 1 else np.arange(len(table))
        ts = table.ts[rows]
        mark = watermarks.get(key)
        before = np.concatenate(([-np.inf if mark is None else mark], ts[:-1]))
        late[rows] = closes[rows] <= np.maximum.accumulate(before)
        top = float(ts.max())
        watermarks[key] = top if mark is None else max(mark, top)
    return late


def split_windows(
    table: EventTable,
    window_s: float,
    models: Mapping[str, ModelConfig],
    slice_values: SliceValues,
) -> dict[WindowKey, WindowBatch]:
    """The table's events by (model, version, window), each with its slices."""
    columns = dict.fromkeys(c for m in dict.fromkeys(table.model) for c in models[m].slices)
    sources = {c: slice_source(table, c) for c in columns}
    _first_seen(table.model, sources, models, slice_values)
    starts = np.floor(table.ts / window_s) * window_s
    if len(set(table.model)) == 1 and len(set(table.version)) == 1 and starts.min() == starts.max():
        key = (table.model[0], table.version[0], float(starts[0]))
        return {key: _window(table, None, key, models[key[0]], slice_values, sources)}
    rows: dict[WindowKey, list[int]] = defaultdict(list)
    for i, key in enumerate(zip(table.model, table.version, starts.tolist(), strict=True)):
        rows[key].append(i)
    return {
        key: _window(table, np.asarray(r), key, models[key[0]], slice_values, sources)
        for key, r in rows.items()
    }


def _window(
    table: EventTable,
    rows: Rows,
    key: WindowKey,
    config: ModelConfig,
    values: SliceValues,
    sources: Mapping[str, list[Any]],
) -> WindowBatch:
    part = table if rows is None else table.take(rows)
    # Columns only other windows' events have (another model's features) are not this window's.
    columns = {
        c: v for c, v in part.columns.items() if c not in part.present or any(part.present[c])
    }
    slices: dict[str, Rows] = {"": None}
    for column in config.slices:
        source = sources[column] if rows is None else [sources[column][i] for i in rows.tolist()]
        slices.update(_slice_rows(source, key[0], column, values))
    types = {c: part.types[c] for c in columns}
    arrays = {c: np.array(v, dtype=np.float64) for c, v in columns.items() if types[c] <= _NUMERIC}
    serving = {c: v for c, v in part.serving.items() if any(x is not None for x in v)}
    return WindowBatch(part.origin, columns, types, slices, arrays, serving)


def _first_seen(
    events_model: list[str],
    sources: Mapping[str, list[Any]],
    models: Mapping[str, ModelConfig],
    values: SliceValues,
) -> None:
    """Meet slice values in record order, so which ones pass the cap does not depend on how
    records were batched or split into windows."""
    # One pass per slice column over the whole batch, not one per model: a batch spans up to
    # thousands of models (issue 40). Values are met per model in record order all the same.
    for column, seen in sources.items():
        firsts = dict.fromkeys(zip(events_model, seen, strict=True))
        for model, value in firsts:
            if column in models[model].slices:
                values.key(model, column, value)


def slice_source(table: EventTable, column: str) -> list[Any]:
    """Each event's value of a slice column: its metadata attribute, else its feature."""
    attr = table.attrs.get(column) or [None] * len(table)
    feature = table.columns.get(column) if not column.startswith("prediction") else None
    values = attr
    if feature is not None:
        values = [a if a is not None else f for a, f in zip(attr, feature, strict=True)]
    if bool in set(map(type, values)):
        # True == 1 as a dict key: as text now, so `true` and `1` stay different slices.
        values = [value_text(v) if type(v) is bool else v for v in values]
    return values


def _slice_rows(attr: list[Any], model: str, column: str, values: SliceValues) -> dict[str, Rows]:
    """Rows per slice key of one slice column's values (events without one: the null slice)."""
    keys = {v: values.key(model, column, v) for v in dict.fromkeys(attr)}
    order = list(dict.fromkeys(keys.values()))
    if len(order) == 1:
        return {order[0]: None}
    code_of = {v: order.index(k) for v, k in keys.items()}
    codes = np.fromiter(map(code_of.__getitem__, attr), np.intp, len(attr))
    return {k: np.flatnonzero(codes == i) for i, k in enumerate(order)}
