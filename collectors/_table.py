"""Validated prediction events of a batch, held column-wise.

A batch is planned as one table rather than as thousands of event objects: windowing, slicing,
profiling and the label join then work on whole columns (lists and numpy arrays), which is what
lets one core keep up with a Kafka consumer. Row i of every column is one event; `origin[i]` is
the index of the record it came from, in the batch's record order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from collectors._base import PredictionEvent
from collectors._serving import serving_from_events

__all__ = ["EventTable", "prediction_columns", "prediction_table", "transpose"]


@dataclass
class EventTable:
    """Prediction events column-wise: ids, event times, profile columns and slice attributes.

    `columns` are the profiled columns (features, then `prediction` or `prediction[i]`); a
    missing value is None. `present` says, for a column some events lack, which events have it
    (so a window of events that all lack it gets no such column, as with events of another
    model). `attrs` hold, per slice column, the event's metadata value (None when absent, so the
    feature of that name decides). `types` are the value types seen per column, so callers need
    not rescan values.
    """

    origin: list[int]
    request_id: list[str]
    model: list[str]
    version: list[str]
    ts: NDArray[np.float64]
    prediction: list[Any]  # as sent, for the label join
    columns: dict[str, list[Any]] = field(default_factory=dict)
    attrs: dict[str, list[Any]] = field(default_factory=dict)
    types: dict[str, set[type]] = field(default_factory=dict)
    present: dict[str, list[bool]] = field(default_factory=dict)
    # Operational fields some event set (latency_ms, ..., `collectors._serving`), None if unset.
    serving: dict[str, list[Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.origin)

    @classmethod
    def empty(cls) -> EventTable:
        """A table of no events."""
        return cls([], [], [], [], np.empty(0), [])

    @classmethod
    def from_events(
        cls, events: Sequence[PredictionEvent], origins: Sequence[int], slices: Sequence[str]
    ) -> EventTable:
        """The table of validated event objects (the general path: any shape of event)."""
        if not events:
            return cls.empty()
        columns, present = transpose([e.features for e in events])
        preds = [e.prediction for e in events]
        outputs, outputs_present = prediction_table(preds)
        columns.update(outputs)
        present.update(outputs_present)
        return cls(
            origin=list(origins),
            request_id=[e.request_id for e in events],
            model=[e.model for e in events],
            version=[e.version for e in events],
            ts=np.fromiter((e.ts for e in events), dtype=np.float64, count=len(events)),
            prediction=preds,
            columns=columns,
            attrs={c: [e.metadata.get(c) for e in events] for c in slices},
            types={c: set(map(type, v)) for c, v in columns.items()},
            present=present,
            serving=serving_from_events([e.serving for e in events]),
        )

    def shifted(self, shift: int) -> EventTable:
        """The same events, their record indices `shift` further on (columns shared)."""
        if not shift:
            return self
        return replace(self, origin=[o + shift for o in self.origin])

    def take(self, rows: Sequence[int] | NDArray[np.intp]) -> EventTable:
        """The events at `rows`, in that order."""
        index = [int(i) for i in rows]
        columns = {c: _gather(v, index) for c, v in self.columns.items()}
        return EventTable(
            origin=_gather(self.origin, index),
            request_id=_gather(self.request_id, index),
            model=_gather(self.model, index),
            version=_gather(self.version, index),
            ts=self.ts[np.asarray(index, dtype=np.intp)],
            prediction=_gather(self.prediction, index),
            columns=columns,
            attrs={c: _gather(v, index) for c, v in self.attrs.items()},
            # the kept rows' types: a type only the other rows had must not decide a kind
            types={c: set(map(type, v)) for c, v in columns.items()},
            present={c: _gather(v, index) for c, v in self.present.items()},
            serving={c: _gather(v, index) for c, v in self.serving.items()},
        )

    @classmethod
    def concat(cls, parts: Sequence[EventTable]) -> EventTable:
        """Rows of all `parts`, ordered by origin (stable); a column missing in a part is None."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0].in_record_order()
        names = list(dict.fromkeys(c for p in parts for c in p.columns))
        attrs = list(dict.fromkeys(c for p in parts for c in p.attrs))
        ops = list(dict.fromkeys(c for p in parts for c in p.serving))
        columns = {c: _stack([p.columns.get(c) for p in parts], parts) for c in names}
        joined = cls(
            origin=[o for p in parts for o in p.origin],
            request_id=[r for p in parts for r in p.request_id],
            model=[m for p in parts for m in p.model],
            version=[v for p in parts for v in p.version],
            ts=np.concatenate([p.ts for p in parts]),
            prediction=[x for p in parts for x in p.prediction],
            columns=columns,
            attrs={c: _stack([p.attrs.get(c) for p in parts], parts) for c in attrs},
            # A part without the column holds None there; no rescan of the values.
            types={c: set().union(*(p.types.get(c, _NONE) for p in parts)) for c in names},
            present={c: _presence(parts, c) for c in names if not _everywhere(parts, c)},
            serving={c: _stack([p.serving.get(c) for p in parts], parts) for c in ops},
        )
        return joined.in_record_order()

    def in_record_order(self) -> EventTable:
        """This table sorted by origin (stable): events of one record keep their order."""
        origin = np.asarray(self.origin)
        if len(origin) < 2 or bool(np.all(origin[1:] >= origin[:-1])):
            return self
        return self.take(np.argsort(origin, kind="stable"))


_NONE = frozenset({type(None)})


def _gather(values: list[Any], index: list[int]) -> list[Any]:
    if len(index) == 1:
        return [values[index[0]]]
    return list(itemgetter(*index)(values)) if index else []


def _stack(columns: list[list[Any] | None], parts: Sequence[EventTable]) -> list[Any]:
    out: list[Any] = []
    for column, part in zip(columns, parts, strict=True):
        out.extend(column if column is not None else [None] * len(part))
    return out


def _everywhere(parts: Sequence[EventTable], column: str) -> bool:
    return all(column in p.columns and column not in p.present for p in parts)


def _presence(parts: Sequence[EventTable], column: str) -> list[bool]:
    out: list[bool] = []
    for part in parts:
        mask = part.present.get(column)
        out.extend(mask if mask is not None else [column in part.columns] * len(part))
    return out


Columns = tuple[dict[str, list[Any]], dict[str, list[bool]]]


def transpose(maps: Sequence[Mapping[str, Any]]) -> Columns:
    """Values per key of a list of mappings (None where a mapping lacks the key), and for each
    key some mappings lack, which mappings have it."""
    if not maps:
        return {}, {}
    names = list(maps[0])
    if len(names) > 1 and len(set(map(len, maps))) == 1:
        # Fast path (every mapping has the same keys): C-level gather and transpose.
        try:
            rows = list(map(itemgetter(*names), maps))
        except KeyError:
            pass
        else:
            return dict(zip(names, map(list, zip(*rows, strict=True)), strict=True)), {}
    names = list(dict.fromkeys(c for m in maps for c in m))
    present = {c: [c in m for m in maps] for c in names}
    return {c: [m.get(c) for m in maps] for c in names}, {
        c: mask for c, mask in present.items() if not all(mask)
    }


def prediction_table(predictions: Sequence[Any]) -> Columns:
    """Prediction columns of validated predictions: `prediction`, or `prediction[i]` each."""
    if set(map(type, predictions)) <= {int, float, str}:
        return {"prediction": list(predictions)}, {}
    return transpose([prediction_columns(p) for p in predictions])


def prediction_columns(prediction: Any) -> dict[str, Any]:
    """A prediction as profile columns: `prediction`, or `prediction[i]` per output element."""
    if isinstance(prediction, dict):
        prediction = prediction["output"]
    if isinstance(prediction, list):
        return {f"prediction[{i}]": v for i, v in enumerate(prediction)}
    return {"prediction": prediction}
