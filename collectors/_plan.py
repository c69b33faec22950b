"""Planning a batch: decode, validate, window and group records, before any database write.

A plan starts from the stored position and watermark of each key, so planning the same records
from the same stored state always gives the same plan: that is what makes retries and restarts
exactly-once. Records are decoded one by one (a bad one becomes a dead letter on its own); the
events are then validated, windowed and sliced as one column-wise table
(:class:`collectors._table.EventTable`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from collectors._adapters import NativeAdapter, loads
from collectors._base import (
    Adapter,
    DecodeError,
    Half,
    LabelEvent,
    PredictionEvent,
    RawRecord,
    Rejection,
)
from collectors._cardinality import Cardinality, Stored
from collectors._columnar import fast_table
from collectors._edge import EdgeLimits, check_label
from collectors._table import EventTable
from collectors._validate import check_depth, maybe_too_deep, utc, validate
from collectors._windows import (
    GroupKey,
    SliceValues,
    WindowBatch,
    WindowKey,
    late_rows,
    split_windows,
)
from monitor.config import CollectConfig, ModelConfig

__all__ = ["GroupKey", "KeyState", "Plan", "Planner", "WindowKey"]


@dataclass(slots=True)
class KeyState:
    """Stored position of one partition/file: next offset and highest event time seen."""

    offset: int = 0
    watermark: float | None = None


@dataclass
class Plan:
    """Everything one batch will write, computed before the transaction."""

    start: dict[str, KeyState]  # the stored states this plan was made from
    records: Sequence[RawRecord] = ()
    end: dict[str, KeyState] = field(default_factory=dict)
    windows: dict[WindowKey, WindowBatch] = field(default_factory=dict)
    table: EventTable = field(default_factory=EventTable.empty)  # on-time predictions
    labels: list[LabelEvent] = field(default_factory=list)
    dead: list[tuple[RawRecord, Rejection]] = field(default_factory=list)
    # Halves still waiting for their other half, and stored halves this plan paired up.
    open_halves: dict[tuple[str, str], Half] = field(default_factory=dict)
    used_halves: set[tuple[str, str]] = field(default_factory=set)
    events: int = 0
    late: int = 0
    skipped: int = 0

    def origin(self, row: int) -> tuple[str, int]:
        """(key, start) of the record at index `row` of the batch."""
        record = self.records[row]
        return record.key, record.start


@dataclass
class _Decoded:
    """A batch's decoded objects: single JSON objects (validated together) and other events."""

    objects: list[Any] = field(default_factory=list)
    object_rows: list[int] = field(default_factory=list)
    events: list[PredictionEvent] = field(default_factory=list)
    event_rows: list[int] = field(default_factory=list)


CHUNK = 2000  # records decoded and validated together: the batch's objects stay in cache


def combine(plans: Sequence[Plan], records: Sequence[RawRecord]) -> Plan:
    """One plan of `records` from plans of its consecutive chunks (each from the last's end)."""
    out = Plan(start=plans[0].start, records=records, end=plans[-1].end)
    windows: dict[WindowKey, list[tuple[WindowBatch, int]]] = {}
    tables, shift = [], 0
    for plan in plans:
        for wkey, window in plan.windows.items():
            windows.setdefault(wkey, []).append((window, shift))
        tables.append(plan.table.shifted(shift))
        out.labels.extend(plan.labels)
        out.dead.extend(plan.dead)
        out.events, out.late = out.events + plan.events, out.late + plan.late
        out.skipped += plan.skipped
        shift += len(plan.records)
    out.windows = {key: WindowBatch.concat(parts) for key, parts in windows.items()}
    out.table = EventTable.concat(tables)
    return out


class Planner:
    """Turns records into a :class:`Plan` given the stored state of their keys."""

    def __init__(
        self,
        adapter: Adapter,
        models: Mapping[str, ModelConfig],
        window_s: float,
        lateness_s: float,
        max_payload_bytes: int,
        stored_half: Callable[[str, str], Half | None] = lambda pair_id, kind: None,
        columnar: bool = True,
        chunk: int = CHUNK,
        max_future_s: float = 300.0,
        clock: Callable[[], float] = time.time,
        settings: CollectConfig | None = None,
        stored: Stored | None = None,
    ) -> None:
        """`stored`: what storage holds per window, so the caps count other processes' names."""
        self.adapter = adapter
        self.native = isinstance(adapter, NativeAdapter)
        self.stored_half = stored_half
        self.models = models
        self.model_names = frozenset(models)
        self.slice_columns = list(dict.fromkeys(c for m in models.values() for c in m.slices))
        settings = settings or CollectConfig()
        self.limits = EdgeLimits(
            settings.max_features_per_event,
            settings.max_value_chars,
            tuple(self.slice_columns),
            frozenset(name for name, m in models.items() if m.generative),
        )
        self.cardinality = Cardinality(
            window_s,
            lateness_s,
            settings.max_versions_per_window,
            settings.max_columns_per_window,
            stored,
        )
        self.window_s = window_s
        self.lateness_s = lateness_s
        self.max_payload = max_payload_bytes
        self.slices = SliceValues(models)
        self.columnar = columnar  # False: validate every event on its own (the reference path)
        self.chunk = chunk
        self.max_future_s = max_future_s
        self.clock = clock
        self.latest = clock() + max_future_s

    def plan_chunked(
        self,
        records: Sequence[RawRecord],
        stored: Mapping[str, KeyState],
        rejected: Mapping[tuple[str, int], Rejection] | None = None,
    ) -> Plan:
        """Like :meth:`plan`, planning `chunk` records at a time into one plan.

        A large batch (the pipeline merges what arrives while the worker is busy) is decoded
        and validated in cache-sized pieces, yet committed as one. Paired formats are planned
        whole: a half waits for its counterpart within the plan.
        """
        if not self.native or len(records) <= self.chunk:
            return self.plan(records, stored, rejected)
        plans = []
        for first in range(0, len(records), self.chunk):
            plans.append(self.plan(records[first : first + self.chunk], stored, rejected))
            stored = plans[-1].end
        return combine(plans, records)

    def plan(
        self,
        records: Sequence[RawRecord],
        stored: Mapping[str, KeyState],
        rejected: Mapping[tuple[str, int], Rejection] | None = None,
    ) -> Plan:
        """Plan `records` from the `stored` states; `rejected` records become dead letters."""
        self.rejected = rejected or {}
        self.latest = self.clock() + self.max_future_s  # later event times are typos
        start = {k: KeyState(s.offset, s.watermark) for k, s in stored.items()}
        plan = Plan(start=start, records=records)
        state = {k: KeyState(s.offset, s.watermark) for k, s in stored.items()}
        decoded = self._decode_all(records, state)
        if decoded is None:
            decoded = _Decoded()
            for row, record in enumerate(records):
                key_state = state.get(record.key) or state.setdefault(record.key, KeyState())
                if record.start < key_state.offset:
                    plan.skipped += 1
                    continue
                key_state.offset = record.end
                self._decode(row, record, plan, decoded)
        plan.end = state
        self._window(self._drop_future(self._table(decoded, plan), plan), plan)
        return plan

    def _decode_all(
        self, records: Sequence[RawRecord], state: dict[str, KeyState]
    ) -> _Decoded | None:
        """The common case in a few C-level passes: every record new, a JSON object, in size.

        None (and `state` untouched) when any record is not: the caller then goes record by
        record, skipping replays and dead-lettering what cannot be decoded.
        """
        if not (self.native and records) or self.rejected:
            return None
        payloads = [r.payload for r in records]
        if max(map(len, payloads)) > self.max_payload:
            return None
        if any(map(maybe_too_deep, payloads)):
            return None  # maybe too deep: checked record by record
        offsets = {k: s.offset for k, s in state.items()}
        for record in records:
            if record.start < offsets.get(record.key, 0):
                return None
            offsets[record.key] = record.end
        objects = [r.decoded for r in records]
        if None in objects:  # (a decoded payload is never None: JSON null is not an event)
            try:
                objects = list(map(orjson.loads, payloads))
            except orjson.JSONDecodeError:
                return None
        if set(map(type, objects)) != {dict}:
            return None
        for key, offset in offsets.items():
            state.setdefault(key, KeyState()).offset = offset
        return _Decoded(objects, list(range(len(objects))))

    def _decode(self, row: int, record: RawRecord, plan: Plan, out: _Decoded) -> None:
        rejection = self.rejected.get((record.key, record.start))
        if rejection is not None:
            plan.dead.append((record, rejection))
            return
        payload = record.payload
        try:
            if len(payload) > self.max_payload:
                raise DecodeError(
                    "oversized",
                    f"payload: {len(payload)} bytes > max_payload_bytes {self.max_payload}",
                )
            if self.native:
                try:
                    obj = orjson.loads(payload)
                except orjson.JSONDecodeError:
                    obj = loads(payload)  # raises the DecodeError that says what is broken
                check_depth(payload, obj)
                if type(obj) is dict:
                    out.objects.append(obj)
                    out.object_rows.append(row)
                    return
                objs = obj if isinstance(obj, list) else [obj]
            else:
                if maybe_too_deep(payload):
                    check_depth(payload, loads(payload))
                objs = list(self.adapter.decode(payload))
            self._events(row, objs, plan, out)
        except DecodeError as err:
            plan.dead.append((record, Rejection(err.reason, err.detail)))

    def _events(self, row: int, objs: list[Any], plan: Plan, out: _Decoded) -> None:
        """Validate a payload's objects on their own: all of them, or none (DecodeError)."""
        if len(objs) == 1 and isinstance(objs[0], Half):
            events = self._pair(objs[0], plan)
        elif not objs:
            raise DecodeError("empty", "payload: no events")
        else:
            events = [validate(obj, self.model_names, self.limits) for obj in objs]
        for event in events:
            if isinstance(event, LabelEvent):
                if event.ts > self.latest:
                    raise self._future(event.ts)
                outcomes = self.models[event.model].outcomes
                check_label(event.label, outcomes.task, outcomes.classes, self.limits)
        for event in events:
            if isinstance(event, LabelEvent):
                plan.labels.append(event)
            else:
                out.events.append(event)
                out.event_rows.append(row)

    def _table(self, decoded: _Decoded, plan: Plan) -> EventTable:
        """The batch's prediction events as one table (labels and rejects set aside)."""
        objects, rows = decoded.objects, decoded.object_rows
        if any("features" not in o for o in objects):  # labels (or broken predictions)
            for obj, row in zip(objects, rows, strict=True):
                if "features" not in obj:
                    self._validate_one(obj, row, plan, decoded)
            keep = [i for i, o in enumerate(objects) if "features" in o]
            objects, rows = [objects[i] for i in keep], [rows[i] for i in keep]
        fast = None
        if self.columnar:
            fast = fast_table(objects, rows, self.model_names, self.slice_columns, self.limits)
        if fast is None:
            for obj, row in zip(objects, rows, strict=True):
                self._validate_one(obj, row, plan, decoded)
            fast = EventTable.empty()
        events = EventTable.from_events(decoded.events, decoded.event_rows, self.slice_columns)
        return EventTable.concat([fast, events])

    def _validate_one(self, obj: Any, row: int, plan: Plan, out: _Decoded) -> None:
        try:
            self._events(row, [obj], plan, out)
        except DecodeError as err:
            plan.dead.append((plan.records[row], Rejection(err.reason, err.detail)))

    def _pair(self, half: Half, plan: Plan) -> list[PredictionEvent | LabelEvent]:
        """Combine a half with its counterpart (in this batch or stored), or keep it waiting."""
        other_kind = "response" if half.kind == "request" else "request"
        key = (half.pair_id, other_kind)
        other = plan.open_halves.get(key)
        stored = False
        if other is None and key not in plan.used_halves:
            other = self.stored_half(*key)
            stored = other is not None
        if other is None:
            plan.open_halves[(half.pair_id, half.kind)] = half
            return []
        request, response = (half, other) if half.kind == "request" else (other, half)
        combine = getattr(self.adapter, "combine")  # noqa: B009 - a PairingAdapter
        events = [
            validate(obj, self.model_names, self.limits) for obj in combine(request, response)
        ]
        if stored:
            plan.used_halves.add(key)
        else:
            del plan.open_halves[key]
        return events

    def _drop_future(self, table: EventTable, plan: Plan) -> EventTable:
        """Dead-letter records with an event dated past the clock plus `max_future_s`.

        Such a time is a typo (ms for s, a wrong year): kept, it would raise the watermark past
        the clock and make every later event of its key late. A record's events go together.
        """
        future = table.ts > self.latest
        if not len(table) or not future.any():
            return table
        bad = {table.origin[i]: float(table.ts[i]) for i in np.flatnonzero(future).tolist()}
        for row, ts in sorted(bad.items()):
            err = self._future(ts)
            plan.dead.append((plan.records[row], Rejection(err.reason, err.detail)))
        return table.take([i for i, o in enumerate(table.origin) if o not in bad])

    def _drop_over_caps(self, table: EventTable, plan: Plan) -> EventTable:
        """Dead-letter records whose events would pass a window's cap on versions or columns
        (`collectors._cardinality`); a record's events go together."""
        over = self.cardinality.over(table)
        if not over:
            return table
        bad: dict[int, Rejection] = {}
        for i, rejection in over.items():
            bad.setdefault(table.origin[i], rejection)
        for row, rejection in sorted(bad.items()):
            plan.dead.append((plan.records[row], rejection))
        return table.take([i for i, o in enumerate(table.origin) if o not in bad])

    def _future(self, ts: float) -> DecodeError:
        return DecodeError(
            "future_timestamp",
            f"timestamp: {utc(ts).isoformat()} is more than {self.max_future_s:g}s ahead of "
            "the clock (collect.max_future_skew)",
        )

    def _window(self, table: EventTable, plan: Plan) -> None:
        """Drop late events (raising watermarks), then split the rest into windows and slices."""
        if not len(table):
            return
        row_keys = [plan.records[o].key for o in table.origin]
        marks = {k: s.watermark for k, s in plan.end.items()}
        late = late_rows(table, row_keys, marks, self.window_s, self.lateness_s)
        for key, mark in marks.items():
            plan.end[key].watermark = mark
        if late.any():
            plan.late = int(late.sum())
            table = table.take(np.flatnonzero(~late))
        table = self._drop_over_caps(table, plan)
        plan.table, plan.events = table, len(table)
        if len(table):
            plan.windows = split_windows(table, self.window_s, self.models, self.slices)
