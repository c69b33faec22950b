"""The label join, inside the batch transaction, set-based and column-wise.

Predictions wait for their labels, and labels that came first for their predictions, in the
model's waiting rooms (collectors/_rooms.py: a batch of entries per row, found through an
in-memory index); a match in either direction adds the pair to its window's outcome summaries
(the input of per-slice outcome metrics) and, with `collect.keep_joined_rows`, writes it to
`labeled_predictions` (drill-down data). Entries older than the label horizon, judged in event
time against the newest event of the model in the batch, never match; stored batches whose
every entry is that old are deleted once that cutoff has moved by `EXPIRY_STEP` of the horizon
since the last deletion. A repeated request id replaces the earlier entry.

Per model and batch the work is a fixed number of statements, whatever the batch size: pairs
within the batch are matched in memory; the batch's ids are looked up in the index of each room
and their stored counterparts taken (a match, or an entry the batch supersedes) with one read
and one update per touched batch row; the batch's entries still waiting are stored as one row
per room, except those already past the horizon. Matched pairs go on as columns
(`JoinedPairs`) to `monitor.summaries`, which groups them with numpy.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Table, delete
from sqlalchemy.orm import Session

from collectors import _bulk as bulk
from collectors._base import LabelEvent
from collectors._bulk import json_text, ts_encoder
from collectors._rooms import LABEL, PREDICTION, WaitingRooms, encode_body, micros
from collectors._table import EventTable
from collectors._windows import slice_source
from monitor.config import ModelConfig
from monitor.storage import LabeledPrediction
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
    rooms: WaitingRooms | None = None,
) -> int:
    """Match the batch's predictions and labels, add matches to the summaries; returns matches.

    With `keep_rows` the pairs are also written to labeled_predictions, and a pair that
    replaces a stored pair of its request id first removes that pair's contribution, so
    summaries count each request once (without, a request id joined again counts again).
    `expired` maps a model to the cutoff its waiting rooms were last emptied to (updated
    here; None deletes old entries in every batch). `rooms` is the process's index of the
    waiting rooms (collectors/_rooms.py): its caller commits or rolls it back with the
    transaction; None reads the rooms afresh from the table.
    """
    if rooms is None:
        rooms = WaitingRooms()
    matched = 0
    own_labels: dict[str, list[LabelEvent]] = defaultdict(list)
    for event in labels:
        own_labels[event.model].append(event)
    # One pass over the batch for all models (a batch spans up to thousands of models: per
    # model passes over the whole batch made joining quadratic, issue 40).
    own_rows = _rows_by_model(predictions)
    sources = _Sources(predictions)
    for model in sorted(own_rows.keys() | own_labels.keys()):
        config = models[model]
        batch = _Batch.of(
            predictions, own_labels.get(model, []), own_rows.get(model, {}), config, sources
        )
        cutoff = max(batch.newest - horizon_s, 0.0)
        rooms.begin(session, model)
        pairs = _match(session, rooms, model, batch, cutoff)
        last = -math.inf if expired is None else expired.get(model, -math.inf)
        if cutoff >= last + horizon_s * EXPIRY_STEP:
            rooms.expire(session, model, int(micros(np.array([cutoff]))[0]))
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
        cls,
        table: EventTable,
        labels: Sequence[LabelEvent],
        rows: dict[str, int],
        config: ModelConfig,
        sources: _Sources,
    ) -> _Batch:
        """One model's entries: `labels` and `rows` (its request ids' rows in `table`) are all
        of it; of a repeated request id, the later one."""
        labs = dict(zip(map(attrgetter("request_id"), labels), labels, strict=True))
        stamps = [e.ts for e in labs.values()]
        if rows:
            stamps.append(float(table.ts[np.fromiter(rows.values(), np.intp, len(rows))].max()))
        newest = max(stamps)
        slices = {c: sources.of(c) for c in config.slices}
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


def _rows_by_model(table: EventTable) -> dict[str, dict[str, int]]:
    """Each model's {request id: row} in `table`; of a repeated request id, the later row."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for i, (model, rid) in enumerate(zip(table.model, table.request_id, strict=True)):
        out[model][rid] = i
    return out


class _Sources:
    """Each event's value of a slice column (`slice_source`), read once per batch."""

    def __init__(self, table: EventTable) -> None:
        self.table = table
        self._values: dict[str, list[Any]] = {}

    def of(self, column: str) -> list[Any]:
        if column not in self._values:
            self._values[column] = slice_source(self.table, column)
        return self._values[column]


def _pick(values: Sequence[Any], rows: list[int]) -> list[Any]:
    """values[i] for each i in rows."""
    if len(rows) > 1:
        return list(itemgetter(*rows)(values))
    return [values[i] for i in rows]


def _match(
    session: Session, rooms: WaitingRooms, model: str, batch: _Batch, cutoff: float
) -> JoinedPairs:
    """Pairs this batch completes: within it, and against the waiting rooms.

    A prediction's label is the batch's own if it has one, else a stored one; a stored
    prediction matches a label of the batch only when the batch has no prediction of its id.
    Stored entries of the batch's other ids are taken too: the batch's entries supersede them."""
    pred_ids, label_ids = list(batch.rows), list(batch.labels)
    since = int(micros(np.array([cutoff]))[0])
    pred_hashes, label_hashes = rooms.hasher(pred_ids), rooms.hasher(label_ids)
    stored_labels = _take_labels(
        session, rooms, model, pred_ids + label_ids, np.concatenate([pred_hashes, label_hashes]),
        len(pred_ids), since,
    )  # fmt: skip
    stored, at = _take_predictions(
        session, rooms, model, label_ids + pred_ids, np.concatenate([label_hashes, pred_hashes]),
        len(label_ids), list(batch.slices), since,
    )  # fmt: skip
    rows = batch.rows
    events = list(batch.labels.values())
    if pred_ids and events:
        values = {rid: e.label for rid, e in batch.labels.items()}
        found = stored_labels | values if stored_labels else values
    else:
        found = stored_labels
    matched = [rid for rid in pred_ids if rid in found] if found else []
    waits = [i for i, rid in enumerate(pred_ids) if rid not in found] if matched else None
    _wait(session, rooms, model, batch, waits, pred_hashes, cutoff)
    open_labels = np.ones(len(label_ids), bool)
    open_labels[at] = False
    if rows and label_ids:
        open_labels &= np.fromiter((rid not in rows for rid in label_ids), bool, len(label_ids))
        late = [k for k, q in enumerate(at) if label_ids[q] not in rows]
    _wait_labels(session, rooms, model, batch, np.flatnonzero(open_labels), label_hashes, cutoff)
    parts = [batch.pairs(matched, [found[rid] for rid in matched])]
    if at and not rows:  # every stored prediction taken pairs with its label of the batch
        parts.append(replace(stored, label=[events[q].label for q in at]))
    elif at and late:
        parts.append(stored.subset(late, [events[at[k]].label for k in late]))
    return JoinedPairs.concat(parts, list(batch.slices))


def _take_labels(
    session: Session,
    rooms: WaitingRooms,
    model: str,
    ids: list[str],
    hashes: NDArray[np.int64],
    matching: int,
    since: int,
) -> dict[str, Any]:
    """Take the stored labels of `ids` not older than `since` (µs): {request id: label} of the
    first `matching` ids (the others are only superseded)."""
    out: dict[str, Any] = {}
    for body, query, at in rooms.take(session, model, LABEL, ids, hashes, since).groups:
        for q, value in zip(query, body.values(at), strict=True):
            if q < matching:
                out[ids[q]] = value
    return out


def _take_predictions(
    session: Session,
    rooms: WaitingRooms,
    model: str,
    ids: list[str],
    hashes: NDArray[np.int64],
    matching: int,
    slices: Sequence[str],
    since: int,
) -> tuple[JoinedPairs, list[int]]:
    """Take the stored predictions of `ids` not older than `since` (µs): the columns of those
    of the first `matching` ids (the others are only superseded), labels still to fill in, and
    the index in `ids` of each."""
    parts, matches = [], []
    for body, query, at in rooms.take(session, model, PREDICTION, ids, hashes, since).groups:
        if query and query[-1] >= matching:  # query indexes ascend
            keep = [k for k, q in enumerate(query) if q < matching]
            at, query = [at[k] for k in keep], [query[k] for k in keep]
        if not at:
            continue
        matches += query
        pick = np.asarray(at, np.intp)
        parts.append(
            JoinedPairs(
                request_id=_pick(body.request_id, at),
                version=_pick(body.version, at),
                ts=body.ts[pick] / 1e6,
                prediction=body.values(at),
                label=[None] * len(at),
                slice_values={
                    c: _pick(body.slices[c], at) if c in body.slices else [None] * len(at)
                    for c in slices
                },
            )
        )
    return (JoinedPairs.concat(parts, list(slices)) if parts else _no_pairs(slices)), matches


def _no_pairs(slices: Sequence[str]) -> JoinedPairs:
    return JoinedPairs([], [], np.empty(0), [], [], {c: [] for c in slices})


_KEYS = ("model", "request_id")
_JOINED_COLUMNS = (
    "model", "request_id", "version", "ts", "prediction", "label", "slice_values", "joined_at",
)  # fmt: skip


def _wait(
    session: Session,
    rooms: WaitingRooms,
    model: str,
    batch: _Batch,
    waits: list[int] | None,
    hashes: NDArray[np.int64],
    cutoff: float,
) -> None:
    """Store the batch's predictions at `waits` (indexes into its ids; None: all) until their
    labels come, unless already expired."""
    t = batch.table
    at = np.fromiter(batch.rows.values(), np.intp, len(batch.rows))
    picked = np.arange(len(at)) if waits is None else np.asarray(waits, np.intp)
    at = at[picked]
    fresh = t.ts[at] >= cutoff
    if not fresh.all():
        at, picked = at[fresh], picked[fresh]
    if not len(at):
        return
    stamps = micros(t.ts[at])
    if len(at) == len(t):  # every row of the table, in order: the columns as they are
        columns = [t.request_id, t.version, t.prediction, *batch.slices.values()]
    else:
        rows = at.tolist()
        columns = [_pick(c, rows) for c in (t.request_id, t.version, t.prediction)]
        columns += [_pick(values, rows) for values in batch.slices.values()]
    slices = dict(zip(batch.slices, columns[3:], strict=True))
    body = encode_body(columns[0], columns[1], stamps, columns[2], slices)
    rooms.wait(session, model, PREDICTION, hashes[picked], stamps, body)


def _wait_labels(
    session: Session,
    rooms: WaitingRooms,
    model: str,
    batch: _Batch,
    unmatched: NDArray[np.intp],
    hashes: NDArray[np.int64],
    cutoff: float,
) -> None:
    """Store the batch's labels at `unmatched` (indexes into its label ids) until their
    predictions come, unless already expired."""
    if not len(unmatched):
        return
    events = list(batch.labels.values())
    events = [events[i] for i in unmatched.tolist()]
    stamps = np.array([e.ts for e in events], np.float64)
    picked = unmatched
    fresh = stamps >= cutoff
    if not fresh.all():
        events = [e for e, k in zip(events, fresh.tolist(), strict=True) if k]
        stamps, picked = stamps[fresh], picked[fresh]
    if not events:
        return
    stored = micros(stamps)
    body = encode_body([e.request_id for e in events], None, stored, [e.label for e in events], {})
    rooms.wait(session, model, LABEL, hashes[picked], stored, body)


def _replace_rows(
    session: Session, model: str, pairs: JoinedPairs, config: ModelConfig, window_s: float
) -> None:
    """Swap replaced joined rows for the new pairs, in labeled_predictions and the summaries."""
    if not len(pairs):
        return
    table: Table = LabeledPrediction.__table__  # type: ignore[assignment]
    names = ("version", "ts", "prediction", "label", "slice_values")
    # Replaced rows leave before the new ones come: on PostgreSQL the table is partitioned by
    # `ts` (its unique key holds it), so a pair re-sent with another time would not conflict.
    stmt = (
        delete(table)
        .where(
            table.c.model == model,
            bulk.in_ids(session, "labeled_predictions.request_id", pairs.request_id),
        )
        .returning(*(table.c[c] for c in names))
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
    keys = (*_KEYS, "ts") if bulk.is_postgres(session) else _KEYS
    bulk.upsert(session, "labeled_predictions", _JOINED_COLUMNS, keys, rows)
