"""Planning a batch: decode, validate, window and group records, before any database write.

A plan starts from the stored position and watermark of each key, so planning the same records
from the same stored state always gives the same plan: that is what makes retries and restarts
exactly-once.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from collectors.base import (
    Adapter,
    DecodeError,
    Half,
    LabelEvent,
    PredictionEvent,
    RawRecord,
    Rejection,
)
from collectors.validate import validate
from monitor.config import ModelConfig

__all__ = ["GroupKey", "KeyState", "Plan", "Planner", "WindowKey", "slice_keys"]

OTHER = "__other__"

# (model, version, window_start epoch seconds)
WindowKey = tuple[str, str, float]
# (model, version, window_start epoch seconds, slice_key)
GroupKey = tuple[str, str, float, str]


@dataclass(slots=True)
class KeyState:
    """Stored position of one partition/file: next offset and highest event time seen."""

    offset: int = 0
    watermark: float | None = None


@dataclass
class Plan:
    """Everything one batch will write, computed before the transaction."""

    start: dict[str, KeyState]  # the stored states this plan was made from
    end: dict[str, KeyState] = field(default_factory=dict)
    windows: dict[WindowKey, list[PredictionEvent]] = field(default_factory=dict)
    # Where each window event came from: (key, start) of its record, parallel to `windows`.
    origins: dict[WindowKey, list[tuple[str, int]]] = field(default_factory=dict)
    # Indices into `windows[group[:3]]` of each group's events.
    groups: dict[GroupKey, list[int]] = field(default_factory=dict)
    # Column values per window, computed once (see collectors.specs.column_values).
    columns: dict[WindowKey, dict[str, list[Any]]] = field(default_factory=dict)
    predictions: list[PredictionEvent] = field(default_factory=list)
    labels: list[LabelEvent] = field(default_factory=list)
    dead: list[tuple[RawRecord, Rejection]] = field(default_factory=list)
    # Halves still waiting for their other half, and stored halves this plan paired up.
    open_halves: dict[tuple[str, str], Half] = field(default_factory=dict)
    used_halves: set[tuple[str, str]] = field(default_factory=set)
    events: int = 0
    late: int = 0
    skipped: int = 0


class SliceValues:
    """Bounded slice values per (model, column): past the cap a value becomes "__other__"."""

    def __init__(self, models: Mapping[str, ModelConfig]) -> None:
        self.models = models
        self.known: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.keys: dict[tuple[str, str, object], str] = {}

    def bucket(self, model: str, column: str, value: object) -> str:
        text = value if isinstance(value, str) else orjson.dumps(value).decode()
        seen = self.known[(model, column)]
        if text in seen:
            return text
        if len(seen) >= self.models[model].max_slice_values:
            return OTHER
        seen.add(text)
        return text


def slice_keys(event: PredictionEvent, config: ModelConfig, values: SliceValues) -> list[str]:
    """ "" (all traffic) plus one canonical-JSON key per slice column the event has a value for."""
    keys = [""]
    for column in config.slices:
        value = event.metadata.get(column)
        if value is None:
            value = event.features.get(column)
        if value is None:
            continue
        cached = values.keys.get((event.model, column, value))
        if cached is None:
            bucket = values.bucket(event.model, column, value)
            cached = orjson.dumps({column: bucket}).decode()
            if len(values.keys) > 100_000:  # bounded memory with high-cardinality values
                values.keys.clear()
            values.keys[(event.model, column, value)] = cached
        keys.append(cached)
    return keys


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
    ) -> None:
        self.adapter = adapter
        self.stored_half = stored_half
        self.models = models
        self.model_names: Collection[str] = frozenset(models)
        self.window_s = window_s
        self.lateness_s = lateness_s
        self.max_payload = max_payload_bytes
        self.slices = SliceValues(models)

    def plan(
        self,
        records: Sequence[RawRecord],
        stored: Mapping[str, KeyState],
        rejected: Mapping[tuple[str, int], Rejection] | None = None,
    ) -> Plan:
        """Plan `records` from the `stored` states; `rejected` records become dead letters."""
        self.rejected = rejected or {}
        plan = Plan(start={k: KeyState(s.offset, s.watermark) for k, s in stored.items()})
        state = {k: KeyState(s.offset, s.watermark) for k, s in stored.items()}
        for record in records:
            key_state = state.setdefault(record.key, KeyState())
            if record.start < key_state.offset:
                plan.skipped += 1
                continue
            self._apply(record, key_state, plan)
            key_state.offset = record.end
        plan.end = state
        return plan

    def _apply(self, record: RawRecord, key_state: KeyState, plan: Plan) -> None:
        rejection = self.rejected.get((record.key, record.start))
        if rejection is not None:
            plan.dead.append((record, rejection))
            return
        try:
            events = self._decode(record.payload, plan)
        except DecodeError as err:
            plan.dead.append((record, Rejection(err.reason, err.detail)))
            return
        for event in events:
            if isinstance(event, LabelEvent):
                plan.labels.append(event)
                continue
            mark = key_state.watermark
            if mark is None or event.ts > mark:
                key_state.watermark = event.ts
            elif self._is_late(event.ts, mark):
                plan.late += 1
                continue
            self._group(event, plan, (record.key, record.start))

    def _decode(self, payload: bytes, plan: Plan) -> list[PredictionEvent | LabelEvent]:
        if len(payload) > self.max_payload:
            raise DecodeError(
                "oversized", f"payload: {len(payload)} bytes > max_payload_bytes {self.max_payload}"
            )
        objs = self.adapter.decode(payload)
        if len(objs) == 1 and isinstance(objs[0], Half):
            return self._pair(objs[0], plan)
        if not objs:
            raise DecodeError("empty", "payload: no events")
        # All-or-nothing per payload: a record is either applied or dead-lettered as a whole.
        return [validate(obj, self.model_names) for obj in objs]

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
        events = [validate(obj, self.model_names) for obj in combine(request, response)]
        if stored:
            plan.used_halves.add(key)
        else:
            del plan.open_halves[key]
        return events

    def _is_late(self, ts: float, watermark: float) -> bool:
        window_end = (math.floor(ts / self.window_s) + 1) * self.window_s
        return window_end + self.lateness_s <= watermark

    def _group(self, event: PredictionEvent, plan: Plan, origin: tuple[str, int]) -> None:
        start = math.floor(event.ts / self.window_s) * self.window_s
        wkey = (event.model, event.version, start)
        window = plan.windows.get(wkey)
        if window is None:
            window = plan.windows[wkey] = []
            plan.origins[wkey] = []
        index = len(window)
        window.append(event)
        plan.origins[wkey].append(origin)
        for slice_key in slice_keys(event, self.models[event.model], self.slices):
            group = (event.model, event.version, start, slice_key)
            members = plan.groups.get(group)
            if members is None:
                plan.groups[group] = [index]
            else:
                members.append(index)
        plan.predictions.append(event)
        plan.events += 1


def prediction_columns(prediction: Any) -> dict[str, Any]:
    """A prediction as profile columns: `prediction`, or `prediction[i]` per output element."""
    if isinstance(prediction, dict):
        prediction = prediction["output"]
    if isinstance(prediction, list):
        return {f"prediction[{i}]": v for i, v in enumerate(prediction)}
    return {"prediction": prediction}
