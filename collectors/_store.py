"""The batch transaction: counters, positions, window profiles and counts, dead letters.

Everything a batch changes is written in one transaction. The first statement bumps the source's
counters, which takes SQLite's write lock before anything is read; on PostgreSQL the position
rows are read `FOR UPDATE`. If the stored positions are not the ones the plan started from
(another consumer, or an earlier attempt whose commit did land), :class:`StalePlan` rolls the
transaction back and the batch is planned again from the stored state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from collectors._base import RawRecord, Rejection
from collectors._derived import PREDICTION
from collectors._edge import printable
from collectors._plan import GroupKey, KeyState, Plan, WindowKey
from collectors._profiling import ProfileBackend
from collectors._specs import BuiltProfile
from collectors._validate import utc
from collectors._windows import WindowBatch
from monitor.config import ModelConfig
from monitor.detectors import rebin
from monitor.errors import CorruptProfileError
from monitor.estimation import DERIVED_COLUMNS
from monitor.outcomes.summary import selected_of
from monitor.storage import (
    DeadLetter,
    IngestCounter,
    SourcePosition,
    WindowCount,
    WindowProfile,
    fetch_rows,
    mark_changed,
)
from monitor.storage.base import utcnow

log = logging.getLogger(__name__)


class StalePlan(Exception):
    """Stored positions moved since the batch was planned; carries the stored states."""

    def __init__(self, stored: dict[str, KeyState]) -> None:
        super().__init__("stored positions changed")
        self.stored = stored


def ensure_counter(session: Session, source: str, source_type: str) -> None:
    """Create the source's counter row once (the batch transaction only updates it).

    Replicas of one source start together: the insert ignores a row another one just created
    instead of failing on the primary key."""
    dialect = session.get_bind().dialect.name
    insert_into = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert_into(IngestCounter).values(source=source, type=source_type)
    session.execute(stmt.on_conflict_do_nothing(index_elements=["source"]))


def bump_counters(session: Session, source: str, plan: Plan, labels: int) -> None:
    """Add the batch's totals; being a write, this also takes SQLite's lock first."""
    session.execute(
        update(IngestCounter)
        .where(IngestCounter.source == source)
        .values(
            events=IngestCounter.events + plan.events,
            labels=IngestCounter.labels + labels,
            dead_letters=IngestCounter.dead_letters + len(plan.dead),
            late=IngestCounter.late + plan.late,
            updated_at=utcnow(),
        )
    )


def read_states(
    session: Session, source: str, keys: Iterable[str], lock: bool
) -> dict[str, KeyState]:
    """Stored states of `keys` (absent keys start at offset 0)."""
    wanted = list(keys)
    stmt = select(SourcePosition).where(
        SourcePosition.source == source, SourcePosition.key.in_(wanted)
    )
    if lock:
        stmt = stmt.with_for_update()
    rows = {p.key: p for p in session.execute(stmt).scalars()}
    out: dict[str, KeyState] = {}
    for key in wanted:
        row = rows.get(key)
        mark = row.watermark.timestamp() if row and row.watermark else None
        out[key] = KeyState(row.offset, mark) if row else KeyState()
    return out


def check_positions(session: Session, source: str, plan: Plan) -> None:
    """Raise StalePlan unless the stored offsets are those the plan started from."""
    lock = session.get_bind().dialect.name == "postgresql"
    stored = read_states(session, source, plan.end, lock)
    for key, state in stored.items():
        expected = plan.start.get(key, KeyState())
        if state.offset != expected.offset:
            raise StalePlan(stored)


def write_positions(
    session: Session,
    source: str,
    plan: Plan,
    ends: Mapping[str, int],
    details: Mapping[str, Mapping[str, Any]],
) -> None:
    """Store each key's new offset, watermark, known end and description."""
    now = utcnow()
    existing = set(
        session.execute(
            select(SourcePosition.key).where(
                SourcePosition.source == source, SourcePosition.key.in_(list(plan.end))
            )
        ).scalars()
    )
    for key, state in plan.end.items():
        values: dict[str, Any] = {
            "offset": state.offset,
            "end_offset": max(ends.get(key, 0), state.offset),
            "watermark": utc(state.watermark) if state.watermark is not None else None,
            "updated_at": now,
        }
        if key in details:
            values["detail"] = dict(details[key])
        if key in existing:
            session.execute(
                update(SourcePosition)
                .where(SourcePosition.source == source, SourcePosition.key == key)
                .values(**values)
            )
        else:
            values.setdefault("detail", {})
            session.execute(insert(SourcePosition).values(source=source, key=key, **values))


def merge_profiles(
    session: Session,
    windows: Iterable[WindowKey],
    build: Callable[[Iterable[WindowKey]], Mapping[tuple[GroupKey, str], BuiltProfile]],
    backend: ProfileBackend,
    window_s: float,
    on_other_spec: Callable[[str, str, str], None] | None = None,
) -> None:
    """Merge the batch's profiles of `windows` (`build(some windows)`, a bounded number of
    windows at a time) into their stored window profiles (or store them).

    The stored profiles of every window the batch touches are read in one statement (locked on
    PostgreSQL), and written back with one executemany insert and one executemany update: the
    batch's cost follows its rows, not its windows' round trips (issue 40's thin per-model
    traffic touches nearly one window per event).

    A stored profile on another spec than the batch's wins (two replicas that each learned a
    spec for a new model version from their own first batch, say): the batch is moved onto the
    stored spec and `on_other_spec(model, version, column)` is told, so later batches use it.
    """
    table = WindowProfile.__table__
    # A bounded number of windows at a time, in key order (so locks are still taken in one
    # order): their built, stored and merged profiles are the batch's memory (a batch spanning
    # 1,000 models' windows held ~600 MiB of payloads at once in bench/fleet.py).
    ordered = sorted(windows)
    now = utcnow()
    for i in range(0, len(ordered), WINDOWS_PER_WRITE):
        chunk: dict[WindowKey, list[tuple[str, str, BuiltProfile]]] = {}
        for (group, column), prof in build(ordered[i : i + WINDOWS_PER_WRITE]).items():
            chunk.setdefault(group[:3], []).append((group[3], column, prof))
        new, changed = _merged(session, table, backend, chunk, on_other_spec)
        write_window_rows(session, table, window_s, now, new, changed)


def _merged(
    session: Session,
    table: Any,
    backend: ProfileBackend,
    windows: Mapping[WindowKey, list[tuple[str, str, BuiltProfile]]],
    on_other_spec: Callable[[str, str, str], None] | None,
) -> tuple[list[tuple[WindowKey, dict[str, Any]]], list[tuple[WindowKey, dict[str, Any]]]]:
    """The new and the changed profile rows of `windows` (their stored rows read, locked)."""
    stored = window_rows(session, table, windows, (table.c.column, table.c.payload))
    new: list[tuple[WindowKey, dict[str, Any]]] = []
    changed: list[tuple[WindowKey, dict[str, Any]]] = []
    for wkey, items in windows.items():
        model, version, _ = wkey
        for slice_key, column, prof in items:
            where = (*wkey, slice_key, column)
            payload = stored.get(where)
            if payload is None:
                row: dict[str, Any] = {"slice_key": slice_key, "column": column, "kind": prof.kind}
                row |= {"n": prof.profile.n, "payload": prof.profile.to_bytes()}
                new.append((wkey, row))
                continue
            stored_profile = _loaded(backend, payload, where)
            batch = prof.profile
            if stored_profile is not None:
                batch = _on_spec_of(stored_profile, batch, where)
                if batch is not prof.profile and on_other_spec is not None:
                    on_other_spec(model, version, column)
            if stored_profile is None:
                merged = batch
            else:
                merged = stored_profile if batch is None else stored_profile.merge(batch)
            key = {"k_slice_key": slice_key, "k_column": column}
            changed.append((wkey, {**key, "v_n": merged.n, "v_payload": merged.to_bytes()}))
    return new, changed


def _on_spec_of(stored: Any, batch: Any, where: tuple[str, str, float, str, str]) -> Any:
    """`batch` on the stored profile's spec (itself when they agree); None when the kinds
    differ, which cannot be moved (logged; the stored profile stays as it is)."""
    if stored.spec.fingerprint == batch.spec.fingerprint:
        return batch
    moved = rebin(batch, stored.spec)
    if moved is None:
        model, version, start, slice_key, column = where
        log.warning(
            "model %r version %r window %s slice %r column %r: a batch profiled as %s cannot join "
            "the stored %s profile; its values are not counted",
            model, version, utc(start).isoformat(), slice_key, column, batch.kind, stored.kind,
        )  # fmt: skip
    return moved


def _loaded(
    backend: ProfileBackend, payload: bytes, where: tuple[str, str, float, str, str]
) -> Any:
    """The stored profile; None for a corrupt one, which then starts afresh from the batch.

    A profile written by an older version with non-finite moments (stored as JSON null) can
    never merge again: keeping it would fail every later batch of its window forever.
    """
    try:
        return backend.load(payload)
    except CorruptProfileError as exc:
        model, version, start, slice_key, column = where
        log.warning(
            "model %r version %r window %s slice %r column %r: %s; the window's profile of "
            "this column starts afresh from this batch",
            model, version, utc(start).isoformat(), slice_key, column, exc,
        )  # fmt: skip
        return None


def merge_counts(
    session: Session, plan: Plan, window_s: float, models: Mapping[str, ModelConfig]
) -> None:
    """Add the batch's event counts per (model, version, window, slice), and of a model with
    `fairness` its scored and positive predictions (demographic parity's selection rates);
    every window's rows in one select, one executemany insert and one executemany update."""
    table = WindowCount.__table__
    stored = window_rows(session, table, plan.windows, (table.c.events,))
    new: list[tuple[WindowKey, dict[str, Any]]] = []
    changed: list[tuple[WindowKey, dict[str, Any]]] = []
    for wkey, window in plan.windows.items():
        selection = _selection(window, models[wkey[0]])
        for slice_key in window.slices:
            scored, selected = selection(slice_key)
            counts = {"events": window.count(slice_key), "scored": scored, "selected": selected}
            if (*wkey, slice_key) in stored:
                row = {"k_slice_key": slice_key, **{f"v_{k}": v for k, v in counts.items()}}
                changed.append((wkey, row))
            else:
                new.append((wkey, {"slice_key": slice_key, **counts}))
    write_window_rows(session, table, window_s, utcnow(), new, changed)


def _selection(window: WindowBatch, config: ModelConfig) -> Callable[[str], tuple[int, int]]:
    """(scored, selected) predictions of a slice of the window; (0, 0) without `fairness`."""
    predictions = window.columns.get(PREDICTION)
    if config.fairness is None or predictions is None:
        return lambda slice_key: (0, 0)
    oc = config.outcomes
    scored, selected = selected_of(predictions, oc.output, oc.threshold)

    def counts(slice_key: str) -> tuple[int, int]:
        rows = window.slices[slice_key]
        if rows is None:
            return int(scored.sum()), int(selected.sum())
        return int(scored[rows].sum()), int(selected[rows].sum())

    return counts


def mark_windows(session: Session, plan: Plan, window_s: float) -> None:
    """Mark the batch's windows changed, so the evaluate job finds them without a scan; those
    with derived columns (`collectors._derived`) for the estimation step too."""
    mark_changed(
        session,
        "drift",
        ((m, v, utc(start), utc(start + window_s)) for m, v, start in plan.windows),
    )
    derived = [
        (m, v, utc(start), utc(start + window_s))
        for (m, v, start), window in plan.windows.items()
        if any(c in window.columns for c in DERIVED_COLUMNS)
    ]
    mark_changed(session, "estimate", derived)


# Windows per select of their stored rows (3 bound values each, well under SQLite's and
# PostgreSQL's limits on parameters).
WINDOWS_PER_SELECT = 500
# Windows whose profiles are merged and written together (`merge_profiles`): bounds the memory
# of a batch spanning many models (~126 profiles of ~2.5 KiB per window at 21 columns x 6
# slices, stored and merged).
WINDOWS_PER_WRITE = 50


def window_rows(
    session: Session, table: Any, windows: Iterable[WindowKey], columns: tuple[Any, ...]
) -> dict[tuple[Any, ...], Any]:
    """The stored rows of `windows`: (model, version, start, slice, ...key columns) -> last
    column value. One select per WINDOWS_PER_SELECT windows; on PostgreSQL the rows are locked
    in key order (replicas merging into the same windows lock them in one order)."""
    out: dict[tuple[Any, ...], Any] = {}
    wanted = sorted(set(windows))
    head = (table.c.model, table.c.version, table.c.window_start)
    keys = (*head, table.c.slice_key, *columns[:-1])
    locking = session.get_bind().dialect.name == "postgresql"
    for i in range(0, len(wanted), WINDOWS_PER_SELECT):
        chunk = {(m, v, utc(start)): start for m, v, start in wanted[i : i + WINDOWS_PER_SELECT]}
        stmt = select(*keys, columns[-1]).where(tuple_(*head).in_(list(chunk)))
        if locking:
            stmt = stmt.order_by(*keys).with_for_update()
        for row in fetch_rows(session, stmt):
            model, version, start = row[0], row[1], chunk[(row[0], row[1], row[2])]
            out[(model, version, start, *row[3:-1])] = row[-1]
    return out


def write_window_rows(
    session: Session,
    table: Any,
    window_s: float,
    now: datetime,
    new: list[tuple[WindowKey, dict[str, Any]]],
    changed: list[tuple[WindowKey, dict[str, Any]]],
) -> None:
    """Insert the windows' new rows and update their changed ones, one executemany each (on
    PostgreSQL an UPDATE ... FROM unnest(arrays) measured no faster and 2.5x the client CPU:
    the server's per-row work dominates).

    Profiles (a `column` key) replace payload and n; counts add `v_events`, `v_scored` and
    `v_selected` to theirs. A changed row is keyed by `k_slice_key` (and `k_column`).
    """
    if new:
        rows = []
        for (model, version, start), row in new:
            head = {"model": model, "version": version, "window_start": utc(start)}
            tail = {"window_end": utc(start + window_s), "updated_at": now}
            rows.append({**head, **row, **tail})
        session.execute(insert(table), rows)
    if not changed:
        return
    keys = ["model", "version", "window_start", "slice_key"]
    if "column" in table.c:
        keys.append("column")
        values: dict[str, Any] = {"n": bindparam("v_n"), "payload": bindparam("v_payload")}
    else:
        values = {c: table.c[c] + bindparam(f"v_{c}") for c in ("events", "scored", "selected")}
    where = [table.c[k] == bindparam(f"k_{k}") for k in keys]
    params = [
        {"k_model": model, "k_version": version, "k_window_start": utc(start), **row}
        for (model, version, start), row in changed
    ]
    session.execute(update(table).where(*where).values(updated_at=now, **values), params)


def dead_letter_rows(
    source: str, dead: Iterable[tuple[RawRecord, Rejection]], cap: int
) -> list[dict[str, Any]]:
    """Dead-letter rows with payloads cut to `cap` bytes."""
    now = datetime.now(UTC)
    return [
        {
            "source": source,
            "key": record.key,
            "offset": record.start,
            "reason": rejection.reason,
            "detail": printable(rejection.detail[:1000]),
            "payload": record.payload[:cap],
            "payload_size": len(record.payload),
            "truncated": len(record.payload) > cap,
            "created_at": now,
        }
        for record, rejection in dead
    ]


def store_dead_letters(session: Session, rows: list[dict[str, Any]]) -> None:
    """Insert dead letters (one executemany)."""
    if rows:
        session.execute(insert(DeadLetter), rows)
