"""Paired shadow mode, inside the batch transaction: a request's primary and shadow
predictions paired by request id, and their pair statistics merged into `shadow_windows`.

Events of a model with `shadow` configured that carry `role` (`primary` or `shadow`,
`collectors._serving`) wait in `shadow_pending`, one row per (model, request id), until the
other side arrives, in this batch or a later one. A completed pair adds its flip, |score
difference| and latency ratio (`monitor.shadow.pair_outcome`) to the summary of its
(primary version, shadow version, window of the primary's event time, slice); the primary's
slices decide. With `collect.join_labels` the pair then waits for its label (a label of the
batch, or one stored on the row when it came first) and adds its correctness pair.

Bounded in memory and storage: only the batch's rows are read (by request id, one statement)
and the table is bounded by the horizons, judged in event time against the newest event of the
model in the batch. A side still alone after `shadow.pair_horizon` is deleted and counted as
unpaired (`unpaired_primary`/`unpaired_shadow`, in its own version's row with the other
version empty), never guessed; a complete pair without its label after `collect.label_horizon`
is deleted. A repeated side of an unpaired request replaces the earlier one; a side repeated
after its pair was counted is ignored. A label that comes before either side waits for them
(in the same row) up to `shadow.pair_horizon`, so how the stream is batched changes nothing.

Shadow events never enter the label join (`primary_only`): their request id is the primary's,
and the join keeps one prediction per request id.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, delete, insert, select, update
from sqlalchemy.orm import Session

from collectors import _bulk as bulk
from collectors._base import LabelEvent
from collectors._table import EventTable
from collectors._validate import utc
from collectors._windows import SliceValues, slice_source
from monitor.config import ModelConfig
from monitor.profiles import OVERALL
from monitor.shadow import LabelledPair, PairOutcome, ShadowSummary, label_outcome, pair_outcome
from monitor.storage import ShadowPending, ShadowWindow
from monitor.storage.base import utcnow

__all__ = ["pair_shadow", "primary_only"]

# (primary version, shadow version, window start epoch seconds, slice key)
PairKey = tuple[str, str, float, str]


def primary_only(table: EventTable) -> EventTable:
    """The table without its `role: shadow` events (what the label join may see)."""
    roles = table.serving.get("role")
    if not roles or "shadow" not in roles:
        return table
    return table.take([i for i, r in enumerate(roles) if r != "shadow"])


@dataclass
class _Parts:
    """What a batch adds to each summary key, before it becomes a ShadowSummary."""

    pairs: dict[PairKey, list[PairOutcome]] = field(default_factory=lambda: defaultdict(list))
    labelled: dict[PairKey, list[LabelledPair]] = field(default_factory=lambda: defaultdict(list))
    unpaired: dict[PairKey, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))

    def summaries(self) -> dict[PairKey, ShadowSummary]:
        keys = set(self.pairs) | set(self.labelled) | set(self.unpaired)
        return {
            k: ShadowSummary.of(
                self.pairs.get(k, ()), self.labelled.get(k, ()), *self.unpaired.get(k, (0, 0))
            )
            for k in keys
        }


@dataclass(frozen=True)
class _Settings:
    window_s: float
    label_horizon_s: float
    join_labels: bool


def pair_shadow(
    session: Session,
    table: EventTable,
    labels: Sequence[LabelEvent],
    models: Mapping[str, ModelConfig],
    slice_values: SliceValues,
    window_s: float,
    label_horizon_s: float,
    join_labels: bool = True,
) -> int:
    """Pair the batch's role-carrying events (and labels) of shadow-mode models; returns the
    pairs completed."""
    roles = table.serving.get("role")
    rows: dict[str, list[int]] = defaultdict(list)
    if roles:
        for i, role in enumerate(roles):
            if role is not None and models[table.model[i]].shadow is not None:
                rows[table.model[i]].append(i)
    by_model: dict[str, list[LabelEvent]] = defaultdict(list)
    for event in labels:
        if models[event.model].shadow is not None:
            by_model[event.model].append(event)
    settings = _Settings(window_s, label_horizon_s, join_labels)
    done = 0
    for model in sorted(set(rows) | set(by_model)):
        sides = _sides(table, rows.get(model, []), models[model], slice_values)
        done += _pair_model(session, model, models[model], sides, by_model[model], settings)
    return done


def _sides(
    table: EventTable, rows: list[int], cfg: ModelConfig, values: SliceValues
) -> dict[str, dict[str, dict[str, Any]]]:
    """{request id: {role: side}} of the batch (a later side replaces an earlier one)."""
    if not rows:
        return {}
    roles, latency = table.serving["role"], table.serving.get("latency_ms")
    sources = {c: slice_source(table, c) for c in cfg.slices}
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for i in rows:
        keys = [OVERALL] + [values.key(cfg.name, c, sources[c][i]) for c in cfg.slices]
        out[table.request_id[i]][roles[i]] = {
            "v": table.version[i],
            "p": table.prediction[i],
            "l": None if latency is None else latency[i],
            "t": float(table.ts[i]),
            "k": keys,
        }
    return out


def _pair_model(
    session: Session,
    model: str,
    cfg: ModelConfig,
    sides: dict[str, dict[str, dict[str, Any]]],
    labels: list[LabelEvent],
    settings: _Settings,
) -> int:
    """Pair one model's sides and labels of the batch with what waits; returns pairs made."""
    assert cfg.shadow is not None
    found = {e.request_id: e for e in labels}
    ids = list(dict.fromkeys([*sides, *found]))
    stored = _stored(session, model, ids)
    parts, done = _Parts(), 0
    waiting: list[dict[str, Any]] = []
    finished: list[str] = []
    for rid in ids:
        row = stored.get(rid)
        body = dict(row.body) if row is not None else {}
        paired = bool(row.paired) if row is not None else False
        if not paired:
            body.update(sides.get(rid, {}))
        if rid in found:
            body["label"] = found[rid].label
        if not paired and "primary" in body and "shadow" in body:
            _add_pair(parts, body, cfg, settings.window_s)
            paired, done = True, done + 1
        if paired and ("label" in body or not settings.join_labels):
            if "label" in body:
                _add_label(parts, body, cfg, settings.window_s)
            if row is not None:
                finished.append(rid)
            continue
        stamps = [s["t"] for r, s in body.items() if r != "label"]
        ts = min(stamps) if stamps else found[rid].ts  # a label waiting for its sides
        waiting.append({"request_id": rid, "ts": utc(ts), "paired": paired, "body": body})
    _write_pending(session, model, waiting, finished)
    if sides or labels:
        _expire(session, model, cfg, parts, _newest(sides, labels), settings)
    _merge_windows(session, model, parts.summaries(), settings.window_s)
    return done


def _add_pair(parts: _Parts, body: dict[str, Any], cfg: ModelConfig, window_s: float) -> None:
    """Add a completed pair's outcome to the keys of its primary's window and slices."""
    one, two = body["primary"], body["shadow"]
    oc = cfg.outcomes
    outcome = pair_outcome(
        one["p"], two["p"], (one["l"], two["l"]), oc.task, oc.threshold, oc.output
    )
    for key in _keys(one["v"], two["v"], one, window_s):
        parts.pairs[key].append(outcome)


def _add_label(parts: _Parts, body: dict[str, Any], cfg: ModelConfig, window_s: float) -> None:
    """Add a labelled pair's correctness pair (when both sides and the label have a value)."""
    one, two = body["primary"], body["shadow"]
    oc = cfg.outcomes
    got = label_outcome(one["p"], two["p"], body["label"], oc.task, oc.threshold, oc.output)
    if got is not None:
        for key in _keys(one["v"], two["v"], one, window_s):
            parts.labelled[key].append(got)


def _keys(primary: str, shadow: str, side: dict[str, Any], window_s: float) -> list[PairKey]:
    start = math.floor(side["t"] / window_s) * window_s
    return [(primary, shadow, start, k) for k in side["k"]]


def _newest(
    sides: Mapping[str, Mapping[str, Any]], labels: list[LabelEvent]
) -> tuple[float | None, float]:
    """(the newest side's event time, if any; the newest of sides and labels)."""
    stamps = [s["t"] for pair in sides.values() for s in pair.values()]
    side = max(stamps) if stamps else None
    return side, max([*stamps, *(e.ts for e in labels)])


def _stored(session: Session, model: str, ids: list[str]) -> dict[str, Any]:
    if not ids:
        return {}
    table: Any = ShadowPending.__table__
    stmt = select(table.c.request_id, table.c.paired, table.c.body).where(
        table.c.model == model, bulk.in_ids(session, "shadow_pending.request_id", ids)
    )
    if bulk.is_postgres(session):
        stmt = stmt.with_for_update()
    out = {}
    for row in session.execute(stmt):
        out[row.request_id] = row
    return out


_PENDING_COLUMNS = ("model", "request_id", "ts", "paired", "body")


def _write_pending(
    session: Session,
    model: str,
    waiting: list[dict[str, Any]],
    finished: list[str],
) -> None:
    """Store the requests still waiting (one upsert, through the driver) and delete those done."""
    table: Any = ShadowPending.__table__
    if waiting:
        ts = bulk.ts_encoder(session)
        rows = [
            (model, r["request_id"], ts(r["ts"]), r["paired"], bulk.json_text(r["body"]))
            for r in waiting
        ]
        bulk.upsert(session, "shadow_pending", _PENDING_COLUMNS, _PENDING_COLUMNS[:2], rows)
    if finished:
        session.execute(
            delete(table).where(
                table.c.model == model, bulk.in_ids(session, "shadow_pending.request_id", finished)
            )
        )


def _expire(
    session: Session,
    model: str,
    cfg: ModelConfig,
    parts: _Parts,
    newest: tuple[float | None, float],
    settings: _Settings,
) -> None:
    """Count and delete sides alone past the pair horizon; delete pairs past the label one.

    The pair horizon is measured from the newest *side*: labels, often dated much later than
    their predictions, must not expire a side whose other side is on its way. Anything
    unpaired past the label horizon (from the newest side or label) goes too."""
    assert cfg.shadow is not None
    table: Any = ShadowPending.__table__
    side, anything = newest
    unlabelled_s = anything - settings.label_horizon_s
    alone_s = unlabelled_s
    if side is not None:
        alone_s = max(alone_s, side - cfg.shadow.pair_horizon.total_seconds())
    alone, unlabelled = utc(alone_s), utc(unlabelled_s)
    old = and_(table.c.model == model, table.c.ts < alone, table.c.paired.is_(False))
    for (body,) in session.execute(select(table.c.body).where(old)):
        for index, role in enumerate(("primary", "shadow")):
            half = body.get(role)
            if half is None:
                continue
            primary, shadow = (half["v"], "") if role == "primary" else ("", half["v"])
            for key in _keys(primary, shadow, half, settings.window_s):
                parts.unpaired[key][index] += 1
    session.execute(delete(table).where(old))
    session.execute(
        delete(table).where(
            table.c.model == model, table.c.ts < unlabelled, table.c.paired.is_(True)
        )
    )


def _merge_windows(
    session: Session, model: str, batch: dict[PairKey, ShadowSummary], window_s: float
) -> None:
    """Merge each key's batch summary into its stored `shadow_windows` row (or insert it)."""
    if not batch:
        return
    table: Any = ShadowWindow.__table__
    now = utcnow()
    starts = sorted({k[2] for k in batch})
    stmt = select(table).where(
        table.c.model == model, table.c.window_start.in_([utc(s) for s in starts])
    )
    if bulk.is_postgres(session):
        stmt = stmt.with_for_update()
    stored = {
        (r.primary_version, r.shadow_version, r.window_start.timestamp(), r.slice_key): r
        for r in session.execute(stmt)
    }
    for key, summary in sorted(batch.items()):
        primary, shadow, start, slice_key = key
        head = {
            "model": model,
            "primary_version": primary,
            "shadow_version": shadow,
            "window_start": utc(start),
            "slice_key": slice_key,
        }
        old = stored.get(key)
        if old is None:
            values = {**head, "window_end": utc(start + window_s), "updated_at": now}
            session.execute(insert(table).values(**values, **summary.to_row()))
            continue
        merged = ShadowSummary.from_row(old).merge(summary)
        where = [table.c[k] == v for k, v in head.items()]
        session.execute(update(table).where(*where).values(**merged.to_row(), updated_at=now))
