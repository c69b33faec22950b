"""Outcome summaries in the database: built at label-join time, read and merged for metrics.

The label join calls `add_joined` in its own transaction: each joined pair is added to the
summary of its (model, version, window, slice) and of the window overall, and the window is
marked changed. Metrics of a window, a day or a week are a merge of these summaries
(`outcome_results`), never a rescan of `labeled_predictions`, which is kept only as drill-down
data with its own shorter retention.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.config import ModelConfig
from monitor.errors import InputError
from monitor.outcomes import OutcomeResult
from monitor.outcomes.from_summary import evaluate_summaries
from monitor.outcomes.summary import (
    OutcomeSummary,
    add_pairs,
    merge_summaries,
    new_summary,
    pair_values,
    summary_from_bytes,
    summary_to_bytes,
)
from monitor.profiles import OVERALL, parse_slice_key, slice_key
from monitor.storage import (
    LabeledPrediction,
    OutcomeSummaryRow,
    consume_changes,
    mark_changed,
    pending_changes,
    session_factory,
    transaction,
    utcnow,
)

# (version, window start, slice key)
SummaryKey = tuple[str, datetime, str]
_REBUILD_CHUNK = 20_000


def window_of(ts: datetime, window_s: float) -> datetime:
    """Start of the `window_s` window `ts` falls in, aligned to the epoch (as ingest cuts it)."""
    return datetime.fromtimestamp(math.floor(ts.timestamp() / window_s) * window_s, UTC)


def summarize_pairs(
    pairs: Iterable[Mapping[str, Any]], cfg: ModelConfig, window_s: float, sign: int = 1
) -> dict[SummaryKey, OutcomeSummary]:
    """Summaries of joined pairs (version, ts, prediction, label, slice_values) per key."""
    groups: dict[SummaryKey, tuple[list[Any], list[Any]]] = {}
    for pair in pairs:
        start = window_of(pair["ts"], window_s)
        oc = cfg.outcomes
        y, s = pair_values(pair["label"], pair["prediction"], oc.task, oc.output)
        values = pair.get("slice_values") or {}
        # A missing slice value is the `(null)` slice, as in window profiles.
        keys = [OVERALL] + [slice_key(c, values.get(c)) for c in cfg.slices]
        for key in keys:
            ys, ss = groups.setdefault((pair["version"], start, key), ([], []))
            ys.append(y)
            ss.append(s)
    out: dict[SummaryKey, OutcomeSummary] = {}
    for group, (ys, ss) in groups.items():
        summary = new_summary(cfg.outcomes.task, cfg.outcomes.threshold)
        add_pairs(summary, ys, ss, sign)
        out[group] = summary
    return out


def add_joined(
    session: Session,
    model: str,
    pairs: Sequence[Mapping[str, Any]],
    cfg: ModelConfig,
    window_s: float,
    sign: int = 1,
) -> None:
    """Add (or with sign=-1 remove) joined pairs to their summaries; mark their windows (for
    the outcome and the estimation steps)."""
    built = summarize_pairs(pairs, cfg, window_s, sign)
    if not built:
        return
    merge_stored(session, model, built, window_s)
    step = timedelta(seconds=window_s)
    windows = {(model, v, start, start + step) for v, start, _ in built}
    mark_changed(session, "outcome", windows)
    mark_changed(session, "estimate", windows)  # realized next to estimated


def merge_stored(
    session: Session, model: str, built: Mapping[SummaryKey, OutcomeSummary], window_s: float
) -> None:
    """Merge summaries into the stored ones (locked on PostgreSQL), inserting new ones."""
    table: Any = OutcomeSummaryRow.__table__
    stmt = select(table.c.version, table.c.window_start, table.c.slice_key, table.c.payload)
    starts = sorted({start for _, start, _ in built})
    stmt = stmt.where(table.c.model == model, table.c.window_start.in_(starts))
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    stored = {(v, s, k): p for v, s, k, p in session.execute(stmt)}
    now, step = utcnow(), timedelta(seconds=window_s)
    new, changed = [], []
    for (version, start, key), summary in sorted(built.items()):
        payload = stored.get((version, start, key))
        merged = summary if payload is None else _merged(payload, summary)
        row = {"n": merged.n, "payload": summary_to_bytes(merged), "updated_at": now}
        ident = {"model": model, "version": version, "window_start": start, "slice_key": key}
        if payload is None:
            new.append({**ident, **row, "window_end": start + step})
        else:
            changed.append({f"k_{k}": v for k, v in ident.items()} | row)
    if new:
        session.execute(insert(table), new)
    if changed:
        where = [table.c[c] == bindparam(f"k_{c}") for c in ("model", "version", "slice_key")]
        where.append(table.c.window_start == bindparam("k_window_start"))
        session.execute(update(table).where(*where), changed)


def _merged(payload: bytes, summary: OutcomeSummary) -> OutcomeSummary:
    try:
        return merge_summaries([summary_from_bytes(payload), summary]) or summary
    except InputError:
        # The task or threshold was reconfigured within this window: the stored summary was
        # built under the old settings and cannot be combined, so the window restarts.
        return summary


def window_summaries(
    engine: Engine | Session, model: str, version: str, start: datetime, end: datetime
) -> list[tuple[dict[str, str] | None, OutcomeSummary]]:
    """Summaries of windows starting in [start, end), merged per slice; overall first.

    Given a Session, reads in it (the evaluate job reads and stores a window on one connection).
    """
    t = OutcomeSummaryRow
    stmt = select(t.slice_key, t.payload).where(
        t.model == model, t.version == version, t.window_start >= start, t.window_start < end
    )
    if isinstance(engine, Session):
        rows = engine.execute(stmt).all()
    else:
        with session_factory(engine)() as s:
            rows = s.execute(stmt).all()
    return merged_by_slice(rows)


def merged_by_slice(
    rows: Iterable[tuple[str, bytes]],
) -> list[tuple[dict[str, str] | None, OutcomeSummary]]:
    """Stored (slice key, payload) summary rows merged per slice, overall first."""
    by_slice: dict[str, list[OutcomeSummary]] = {}
    for key, payload in rows:
        by_slice.setdefault(key, []).append(summary_from_bytes(payload))
    out = []
    for key in sorted(by_slice):
        merged = merge_summaries(by_slice[key])
        if merged is not None:
            out.append((parse_slice_key(key), merged))
    return out


def outcome_results(
    engine: Engine | Session, cfg: ModelConfig, version: str, start: datetime, end: datetime
) -> list[OutcomeResult]:
    """Per-slice outcome metrics of [start, end) from merged summaries ([] when no pairs)."""
    return results_of(cfg, window_summaries(engine, cfg.name, version, start, end))


def results_of(
    cfg: ModelConfig, summaries: Sequence[tuple[dict[str, str] | None, OutcomeSummary]]
) -> list[OutcomeResult]:
    """The configured metrics of merged per-slice summaries ([] when they hold no pairs)."""
    if not summaries or summaries[0][1].n == 0:
        return []
    oc = cfg.outcomes
    return evaluate_summaries(
        summaries,
        task=oc.task,
        metrics=oc.metrics or None,
        baseline=oc.baseline or None,
        tolerance=oc.tolerance,
        min_support=oc.min_support,
    )


def rebuild_pending(engine: Engine, cfg: ModelConfig, window_s: float) -> int:
    """Rebuild the model's summaries from stored joined rows if a backfill is pending.

    Migration 0011 asks for this once per model that had joined rows: only the daemon knows the
    model's task, threshold, slices and window size. Returns the joined rows read.
    """
    changes = pending_changes(engine, cfg.name, "backfill")
    if not changes:
        return 0
    rows = 0
    with transaction(engine) as s:
        s.execute(delete(OutcomeSummaryRow).where(OutcomeSummaryRow.model == cfg.name))
        chunk: list[dict[str, Any]] = []
        for row in s.execute(_joined(cfg.name)).mappings():
            chunk.append(dict(row))
            if len(chunk) >= _REBUILD_CHUNK:
                add_joined(s, cfg.name, chunk, cfg, window_s)
                rows, chunk = rows + len(chunk), []
        add_joined(s, cfg.name, chunk, cfg, window_s)
        rows += len(chunk)
    consume_changes(engine, "backfill", changes)
    return rows


def _joined(model: str) -> Any:
    t = LabeledPrediction
    return (
        select(t.version, t.ts, t.prediction, t.label, t.slice_values)
        .where(t.model == model)
        .execution_options(yield_per=_REBUILD_CHUNK)
    )
