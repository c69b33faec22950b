"""Outcome summaries in the database: built at label-join time, read and merged for metrics.

The label join calls `add_joined` in its own transaction with the batch's joined pairs as
columns (`JoinedPairs`): the pairs are grouped per (version, window, slice) with numpy, each
group is added to a summary with the summary's vectorised `add`, and the batch's summaries are
merged into the stored ones with one read and one upsert; their windows are marked changed.
Metrics of a window, a day or a week are a merge of these summaries (`outcome_results`), never
a rescan of `labeled_predictions`, which is optional drill-down data
(`collect.keep_joined_rows`) with its own shorter retention.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import bindparam, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.config import ModelConfig
from monitor.errors import CorruptProfileError, InputError
from monitor.outcomes import OutcomeResult
from monitor.outcomes.from_summary import evaluate_summaries
from monitor.outcomes.summary import (
    OutcomeSummary,
    add_pairs,
    merge_summaries,
    merged_from_bytes,
    new_summary,
    pair_columns,
    summary_from_bytes,
    summary_to_bytes,
)
from monitor.profiles import OVERALL, parse_slice_key, slice_key
from monitor.storage import (
    Change,
    LabeledPrediction,
    OutcomeSummaryRow,
    consume_changes,
    fetch_rows,
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


@dataclass(frozen=True)
class JoinedPairs:
    """Joined (prediction, label) pairs of one model, column-wise: row i of each column is a pair.

    `ts` is the prediction's event time in epoch seconds (windows are cut on it);
    `slice_values` holds, per slice column, each pair's value (None when it has none).
    """

    request_id: list[str]
    version: list[str]
    ts: NDArray[np.float64]
    prediction: list[Any]
    label: list[Any]
    slice_values: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.request_id)
        sizes = [len(self.version), len(self.ts), len(self.prediction), len(self.label)]
        sizes += [len(v) for v in self.slice_values.values()]
        if any(size != n for size in sizes):
            raise ValueError(f"joined pairs: columns of unequal length {[n, *sizes]}")

    def __len__(self) -> int:
        return len(self.request_id)

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]], slices: Sequence[str]) -> JoinedPairs:
        """Pairs from mappings (version, ts as aware datetime, prediction, label, slice_values)."""
        values = [row.get("slice_values") or {} for row in rows]
        return cls(
            request_id=[str(row.get("request_id", "")) for row in rows],
            version=[row["version"] for row in rows],
            ts=np.array([row["ts"].timestamp() for row in rows], dtype=np.float64),
            prediction=[row["prediction"] for row in rows],
            label=[row["label"] for row in rows],
            slice_values={c: [v.get(c) for v in values] for c in slices},
        )

    def subset(self, rows: Sequence[int], label: list[Any]) -> JoinedPairs:
        """The pairs at `rows`, in that order, with labels `label`."""
        return JoinedPairs(
            request_id=[self.request_id[i] for i in rows],
            version=[self.version[i] for i in rows],
            ts=self.ts[np.asarray(rows, np.intp)],
            prediction=[self.prediction[i] for i in rows],
            label=label,
            slice_values={c: [v[i] for i in rows] for c, v in self.slice_values.items()},
        )

    @classmethod
    def concat(cls, parts: Sequence[JoinedPairs], slices: Sequence[str]) -> JoinedPairs:
        """The pairs of all parts, in order."""
        nonempty = [p for p in parts if len(p)]
        if len(nonempty) == 1 and list(nonempty[0].slice_values) == list(slices):
            return nonempty[0]  # the common case of one kind of match: no copy
        n = [len(p) for p in parts]
        return cls(
            request_id=[r for p in parts for r in p.request_id],
            version=[v for p in parts for v in p.version],
            ts=np.concatenate([p.ts for p in parts]) if parts else np.empty(0),
            prediction=[v for p in parts for v in p.prediction],
            label=[v for p in parts for v in p.label],
            slice_values={
                c: [
                    v
                    for p, k in zip(parts, n, strict=True)
                    for v in p.slice_values.get(c, [None] * k)
                ]
                for c in slices
            },
        )


def summarize_pairs(
    pairs: JoinedPairs, cfg: ModelConfig, window_s: float, sign: int = 1
) -> dict[SummaryKey, OutcomeSummary]:
    """Summaries of joined pairs per (version, window, slice), grouped with numpy.

    Each pair counts overall and in its slice of each slice column (a missing value: the
    `(null)` slice, as in window profiles). A group's pairs are added in pair order with the
    summary's own vectorised `add`, so the result equals adding the pairs one group at a time.
    """
    n = len(pairs)
    if n == 0:
        return {}
    oc = cfg.outcomes
    y, s = pair_columns(pairs.label, pairs.prediction, oc.task, oc.output)
    versions, version_codes = _codes(pairs.version)
    windows, window_codes = np.unique(np.floor(pairs.ts / window_s), return_inverse=True)
    keys, key_codes = _slice_codes(pairs.slice_values, cfg.slices, n)
    blocks = len(key_codes) // n
    group = np.tile(version_codes * len(windows) + window_codes, blocks) * len(keys) + key_codes
    ids, inverse = np.unique(group, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    members = np.split(order % n, np.cumsum(np.bincount(inverse))[:-1])
    starts = [datetime.fromtimestamp(w * window_s, UTC) for w in windows.tolist()]
    out: dict[SummaryKey, OutcomeSummary] = {}
    for gid, rows in zip(ids.tolist(), members, strict=True):
        vw, key = divmod(gid, len(keys))
        version, window = divmod(vw, len(windows))
        summary = new_summary(oc.task, oc.threshold)
        add_pairs(summary, y[rows], s[rows], sign)
        out[(versions[version], starts[window], keys[key])] = summary
    return out


def _codes(values: Sequence[str]) -> tuple[list[str], NDArray[np.intp]]:
    """(distinct values in first-seen order, each value's index among them)."""
    index = {v: i for i, v in enumerate(dict.fromkeys(values))}
    return list(index), np.fromiter(map(index.__getitem__, values), np.intp, len(values))


def _slice_codes(
    values: Mapping[str, Sequence[Any]], slices: Sequence[str], n: int
) -> tuple[list[str], NDArray[np.intp]]:
    """(slice keys, each pair's key code per block: overall, then one block per slice column)."""
    index = {OVERALL: 0}
    blocks = [np.zeros(n, np.intp)]
    for column in slices:
        texts = _slice_keys(column, values.get(column) or [None] * n)
        code = {k: index.setdefault(k, len(index)) for k in dict.fromkeys(texts)}
        blocks.append(np.fromiter(map(code.__getitem__, texts), np.intp, n))
    return list(index), np.concatenate(blocks)


def _slice_keys(column: str, values: Sequence[Any]) -> list[str]:
    """Each value's slice key, computed once per distinct value where values are text."""
    if set(map(type, values)) <= _TEXT:
        memo = {v: slice_key(column, v) for v in dict.fromkeys(values)}
        return list(map(memo.__getitem__, values))
    # Other kinds (True == 1 as dict keys, NaN != NaN) each take their own key.
    return [slice_key(column, v) for v in values]


_TEXT = frozenset({str, type(None)})


def add_joined(
    session: Session,
    model: str,
    pairs: JoinedPairs,
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
    mark_changed(session, ("outcome", "estimate"), windows)  # realized next to estimated


def merge_stored(
    session: Session, model: str, built: Mapping[SummaryKey, OutcomeSummary], window_s: float
) -> None:
    """Merge summaries into the stored ones (locked on PostgreSQL): one read, one upsert."""
    read, upsert = _merge_statements(session.get_bind().dialect.name)
    starts = sorted({start for _, start, _ in built})
    found = session.execute(read, {"model": model, "starts": starts})
    stored = {(v, s, k): p for v, s, k, p in found}
    now, step = utcnow(), timedelta(seconds=window_s)
    rows = []
    for (version, start, key), summary in sorted(built.items()):
        payload = stored.get((version, start, key))
        merged = summary if payload is None else _merged(payload, summary)
        rows.append(
            {"model": model, "version": version, "window_start": start, "slice_key": key}
            | {"window_end": start + step, "n": merged.n, "payload": summary_to_bytes(merged)}
            | {"updated_at": now}
        )
    session.execute(upsert, rows)


@cache
def _merge_statements(dialect: str) -> tuple[Any, Any]:
    """(read of a model's stored summaries in windows `starts`, upsert), built once per dialect
    (building them costs more than running them on a batch's handful of rows)."""
    table: Any = OutcomeSummaryRow.__table__
    read = select(table.c.version, table.c.window_start, table.c.slice_key, table.c.payload)
    read = read.where(
        table.c.model == bindparam("model"),
        table.c.window_start.in_(bindparam("starts", expanding=True)),
    )
    postgres = dialect == "postgresql"
    if postgres:
        read = read.with_for_update()
    upsert = (postgresql.insert if postgres else sqlite.insert)(table)
    keep = ("model", "version", "window_start", "slice_key", "window_end")
    updates = {c.name: upsert.excluded[c.name] for c in table.c if c.name not in keep}
    return read, upsert.on_conflict_do_update(index_elements=keep[:4], set_=updates)


def _merged(payload: bytes, summary: OutcomeSummary) -> OutcomeSummary:
    try:
        return merge_summaries([summary_from_bytes(payload), summary]) or summary
    except CorruptProfileError:
        raise
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
        rows = fetch_rows(engine, stmt)
    else:
        with session_factory(engine)() as s:
            rows = fetch_rows(s, stmt)
    return merged_by_slice(rows)


def summaries_by_window(
    session: Session, model: str, version: str, starts: Sequence[datetime]
) -> list[list[tuple[dict[str, str] | None, OutcomeSummary]]]:
    """Each window's summaries (`window_summaries`) for the windows starting at `starts`, in
    their order, in one query."""
    t = OutcomeSummaryRow
    stmt = select(t.window_start, t.slice_key, t.payload).where(
        t.model == model, t.version == version, t.window_start.in_(list(starts))
    )
    rows: dict[datetime, list[tuple[str, bytes]]] = {}
    for start, key, payload in fetch_rows(session, stmt):
        rows.setdefault(start, []).append((key, payload))
    return [merged_by_slice(rows.get(start, [])) for start in starts]


def merged_by_slice(
    rows: Iterable[tuple[str, bytes]],
) -> list[tuple[dict[str, str] | None, OutcomeSummary]]:
    """Stored (slice key, payload) summary rows merged per slice, overall first."""
    by_slice: dict[str, list[bytes]] = {}
    for key, payload in rows:
        by_slice.setdefault(key, []).append(payload)
    out = []
    for key in sorted(by_slice):
        merged = merged_from_bytes(by_slice[key])
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
        correction=oc.correction,
    )


def rebuild_pending(
    engine: Engine, cfg: ModelConfig, window_s: float, pending: Sequence[Change] | None = None
) -> int:
    """Rebuild the model's summaries from stored joined rows if a backfill is pending.

    Migration 0011 asks for this once per model that had joined rows: only the daemon knows the
    model's task, threshold, slices and window size. Returns the joined rows read. `pending`:
    the model's pending backfill changes when the caller read them already.
    """
    changes = pending_changes(engine, cfg.name, "backfill") if pending is None else pending
    if not changes:
        return 0
    rows = 0
    with transaction(engine) as s:
        s.execute(delete(OutcomeSummaryRow).where(OutcomeSummaryRow.model == cfg.name))
        chunk: list[dict[str, Any]] = []
        for row in s.execute(_joined(cfg.name)).mappings():
            chunk.append(dict(row))
            if len(chunk) >= _REBUILD_CHUNK:
                add_joined(s, cfg.name, JoinedPairs.from_rows(chunk, cfg.slices), cfg, window_s)
                rows, chunk = rows + len(chunk), []
        add_joined(s, cfg.name, JoinedPairs.from_rows(chunk, cfg.slices), cfg, window_s)
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
