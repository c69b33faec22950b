"""The label join, inside the batch transaction, set-based and column-wise.

Predictions wait in `pending_predictions`, labels that came first in `pending_labels`; a match in
either direction adds the pair to its window's outcome summaries (the input of per-slice outcome
metrics) and, with `collect.keep_joined_rows`, writes it to `labeled_predictions` (drill-down
data). Entries older than the label horizon, judged in event time against the newest event of
the model in the batch, never match; they are deleted from both waiting rooms once that cutoff
has moved by `EXPIRY_STEP` of the horizon since the last deletion. A repeated request id
replaces the earlier entry.

Per model and batch the work is a fixed number of statements, whatever the batch size: pairs
within the batch are matched in memory; ONE `DELETE ... RETURNING` per waiting room, restricted
to the batch's ids passed as a single parameter, takes the stored counterparts of the batch's
predictions and labels (a match, or an entry the batch supersedes); one more per room deletes
old entries now and then; the batch's entries still waiting are written in bulk
(collectors/_bulk.py: COPY on PostgreSQL, one executemany on SQLite), except those already past
the horizon, as typed columns rather than JSON where the values allow it
(collectors/_waiting.py). Matched pairs go on as columns (`JoinedPairs`) to
`monitor.summaries`, which groups them with numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from collectors import _bulk as bulk
from collectors import _waiting as waiting
from collectors._base import LabelEvent
from collectors._bulk import json_text, ts_encoder
from collectors._table import EventTable
from collectors._windows import slice_source
from monitor.config import ModelConfig
from monitor.storage import LabeledPrediction, PendingLabel, PendingPrediction
from monitor.storage.base import utcnow
from monitor.summaries import JoinedPairs, add_joined

# Entries past the horizon never match (the takes skip them); they are deleted once the
# cutoff has moved by this share of the horizon since their model's last deletion.
EXPIRY_STEP = 0.01


def join_labels(
    session: Session,
    predictions: EventTable,
    labels: Sequence[LabelEvent],
    models: dict[str, ModelConfig],
    horizon_s: float,
    window_s: float,
    keep_rows: bool = False,
    expired: dict[str, float] | None = None,
) -> int:
    """Match the batch's predictions and labels, add matches to the summaries; returns matches.

    With `keep_rows` the pairs are also written to labeled_predictions, and a pair that
    replaces a stored pair of its request id first removes that pair's contribution, so
    summaries count each request once (without, a request id joined again counts again).
    `expired` maps a model to the cutoff its waiting rooms were last emptied to (updated
    here; None deletes old entries in every batch).
    """
    matched = 0
    for model in sorted(set(predictions.model) | {e.model for e in labels}):
        config = models[model]
        batch = _Batch.of(predictions, labels, model, config)
        cutoff = max(batch.newest - horizon_s, 0.0)
        pairs = _match(session, model, batch, cutoff)
        last = -math.inf if expired is None else expired.get(model, -math.inf)
        if cutoff >= last + horizon_s * EXPIRY_STEP:
            _expire(session, model, cutoff)
            if expired is not None:
                expired[model] = cutoff
        if keep_rows:
            _replace_rows(session, model, pairs, config, window_s)
        add_joined(session, model, pairs, config, window_s)
        matched += len(pairs)
    return matched


@dataclass(frozen=True)
class _Batch:
    """One model's predictions (row of each request id in the table) and labels of a batch."""

    table: EventTable
    rows: dict[str, int]
    labels: dict[str, LabelEvent]
    slices: dict[str, list[Any]]
    newest: float

    @classmethod
    def of(
        cls, table: EventTable, labels: Sequence[LabelEvent], model: str, config: ModelConfig
    ) -> _Batch:
        """The batch's entries of `model`; of a repeated request id, the later one."""
        if set(table.model) == {model}:
            rows = dict(zip(table.request_id, range(len(table)), strict=True))
        else:
            rows = {table.request_id[i]: i for i, m in enumerate(table.model) if m == model}
        labs = {e.request_id: e for e in labels if e.model == model}
        stamps = [e.ts for e in labs.values()]
        if rows:
            stamps.append(float(table.ts[np.fromiter(rows.values(), np.intp, len(rows))].max()))
        newest = max(stamps)
        slices = {c: slice_source(table, c) for c in config.slices}
        return cls(table, rows, labs, slices, newest)

    def pairs(self, ids: Sequence[str], labels: list[Any]) -> JoinedPairs:
        """Pairs of the batch's predictions `ids` with `labels` (in that order)."""
        rows = list(map(self.rows.__getitem__, ids))
        t = self.table
        return JoinedPairs(
            request_id=list(ids),
            version=_pick(t.version, rows),
            ts=t.ts[np.asarray(rows, np.intp)] if rows else np.empty(0),
            prediction=_pick(t.prediction, rows),
            label=labels,
            slice_values={c: _pick(values, rows) for c, values in self.slices.items()},
        )


def _pick(values: Sequence[Any], rows: list[int]) -> list[Any]:
    """values[i] for each i in rows."""
    if len(rows) > 1:
        return list(itemgetter(*rows)(values))
    return [values[i] for i in rows]


def _match(session: Session, model: str, batch: _Batch, cutoff: float) -> JoinedPairs:
    """Pairs this batch completes: within it, and against the waiting rooms.

    A prediction's label is the batch's own if it has one, else a stored one; a stored
    prediction matches a label of the batch only when the batch has no prediction of its id."""
    pred_ids, label_ids = list(batch.rows), list(batch.labels)
    since = waiting.micros(np.array([cutoff]))[0]
    stored_labels = _take_labels(session, model, pred_ids, since)
    stored_preds, stored = _take_predictions(session, model, label_ids, list(batch.slices), since)
    values = {rid: e.label for rid, e in batch.labels.items()}
    found = stored_labels | values if stored_labels else values
    matched = [rid for rid in pred_ids if rid in found] if found else []
    late_preds = (
        [rid for rid in label_ids if rid in stored_preds and rid not in batch.rows]
        if stored_preds
        else []
    )
    waits = [rid for rid in pred_ids if rid not in found] if matched else pred_ids
    _wait(session, model, batch, waits, cutoff)
    rows = batch.rows
    unmatched = [rid for rid in label_ids if rid not in rows and rid not in stored_preds]
    _wait_labels(session, model, batch, unmatched, cutoff)
    parts = [batch.pairs(matched, [found[rid] for rid in matched])]
    if late_preds:
        at = [stored_preds[rid] for rid in late_preds]
        parts.append(stored.subset(at, [values[rid] for rid in late_preds]))
    return JoinedPairs.concat(parts, list(batch.slices))


def _take_labels(session: Session, model: str, ids: Sequence[str], since: int) -> dict[str, Any]:
    """Stored labels of `ids` not older than `since` (µs), removed from the waiting room:
    {request id: label}."""
    rows = bulk.take(session, "pending_labels", model, ids, _LABEL_COLUMNS[1:-1], {"label"}, since)
    rids, num, txt, doc = _columns(rows, 4)
    return dict(zip(rids, waiting.join_values(num, txt, doc), strict=True))


def _take_predictions(
    session: Session, model: str, ids: Sequence[str], slices: Sequence[str], since: int
) -> tuple[dict[str, int], JoinedPairs]:
    """Stored predictions of `ids` not older than `since` (µs), removed from the waiting room:
    ({request id: row}, columns) with labels still to fill in."""
    columns = _PRED_COLUMNS[1:]
    rows = bulk.take(session, "pending_predictions", model, ids, columns, {"prediction"}, since)
    rids, versions, stamps, num, txt, doc, values = _columns(rows, len(_PRED_COLUMNS) - 1)
    pairs = JoinedPairs(
        request_id=rids,
        version=versions,
        ts=waiting.seconds(stamps),
        prediction=waiting.join_values(num, txt, doc),
        label=[None] * len(rids),
        slice_values=waiting.slice_columns(values, slices),
    )
    return {rid: i for i, rid in enumerate(rids)}, pairs


def _columns(rows: Sequence[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """Rows -> columns (`width` empty columns for no rows)."""
    return [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]


_KEYS = ("model", "request_id")
_PRED_COLUMNS = (
    "model", "request_id", "version", "ts", "prediction_num", "prediction_text", "prediction",
    "slice_values",
)  # fmt: skip
_LABEL_COLUMNS = ("model", "request_id", "label_num", "label_text", "label", "ts")
_JOINED_COLUMNS = (
    "model", "request_id", "version", "ts", "prediction", "label", "slice_values", "joined_at",
)  # fmt: skip


def _wait(session: Session, model: str, batch: _Batch, ids: list[str], cutoff: float) -> None:
    """Store the batch's predictions `ids` until their labels come (unless already expired)."""
    t = batch.table
    at = np.fromiter((batch.rows[rid] for rid in ids), np.intp, len(ids))
    at = at[t.ts[at] >= cutoff]
    rows = at.tolist()
    num, txt, doc = waiting.split_values([t.prediction[i] for i in rows])
    columns = {
        "model": [model] * len(rows),
        "request_id": [t.request_id[i] for i in rows],
        "version": [t.version[i] for i in rows],
        "ts": waiting.micros(t.ts[at]),
        "prediction_num": num,
        "prediction_text": txt,
        "prediction": doc,
        "slice_values": waiting.slice_texts(batch.slices, rows),
    }
    bulk.upsert_columns(session, "pending_predictions", _KEYS, columns)


def _wait_labels(
    session: Session, model: str, batch: _Batch, ids: list[str], cutoff: float
) -> None:
    """Store the batch's labels `ids` until their predictions come (unless already expired)."""
    events = list(map(batch.labels.__getitem__, ids))
    stamps = np.array([e.ts for e in events], np.float64)
    if len(events) and stamps.min() < cutoff:
        keep = (stamps >= cutoff).tolist()
        events = [e for e, k in zip(events, keep, strict=True) if k]
        stamps = stamps[stamps >= cutoff]
    num, txt, doc = waiting.split_values([e.label for e in events])
    columns = {
        "model": [model] * len(events),
        "request_id": [e.request_id for e in events],
        "label_num": num,
        "label_text": txt,
        "label": doc,
        "ts": waiting.micros(stamps),
    }
    bulk.upsert_columns(session, "pending_labels", _KEYS, columns)


def _replace_rows(
    session: Session, model: str, pairs: JoinedPairs, config: ModelConfig, window_s: float
) -> None:
    """Swap replaced joined rows for the new pairs, in labeled_predictions and the summaries."""
    if not len(pairs):
        return
    table = LabeledPrediction.__table__
    names = ("version", "ts", "prediction", "label", "slice_values")
    stmt = select(*(table.c[c] for c in names)).where(
        table.c.model == model,
        bulk.in_ids(session, "labeled_predictions.request_id", pairs.request_id),
    )
    old = [dict(zip(names, row, strict=True)) for row in session.execute(stmt)]
    add_joined(session, model, JoinedPairs.from_rows(old, config.slices), config, window_s, -1)
    joined_at = ts_encoder(session)(utcnow())
    stamps = bulk.ts_column(session, pairs.ts)
    rows = [
        (model, pairs.request_id[i], pairs.version[i], stamps[i],
         json_text(pairs.prediction[i]), json_text(pairs.label[i]),
         json_text({c: v[i] for c, v in pairs.slice_values.items()}), joined_at)
        for i in range(len(pairs))
    ]  # fmt: skip
    bulk.upsert(session, "labeled_predictions", _JOINED_COLUMNS, _KEYS, rows)


def _expire(session: Session, model: str, before: float) -> None:
    cutoff = waiting.micros(np.array([before]))[0]
    for table in (PendingPrediction, PendingLabel):
        session.execute(
            delete(table)
            .where(table.model == model, table.ts < cutoff)
            .execution_options(synchronize_session=False)
        )
