"""The label join, inside the batch transaction, set-based.

Predictions wait in `pending_predictions`, labels that came first in `pending_labels`; a match in
either direction moves the pair to `labeled_predictions` (drill-down data) and adds it to its
window's outcome summaries (the input of per-slice outcome metrics). Both waiting rooms are
emptied of entries older than the label horizon, judged in event time against the newest event
of the model in the batch. A repeated request id replaces the earlier entry.

Per model and batch the work is a fixed number of statements, whatever the batch size: the
batch's unmatched predictions and labels are written in bulk (collectors/_bulk.py: COPY on
PostgreSQL, one executemany on SQLite), then ONE join of the two waiting rooms restricted to the
batch's ids finds the pairs that completed, which are deleted from both rooms by id set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from collectors import _bulk as bulk
from collectors._bulk import json_text, ts_encoder
from collectors.base import LabelEvent
from collectors.table import EventTable
from collectors.validate import utc
from collectors.windows import slice_source
from monitor.config import ModelConfig
from monitor.storage import LabeledPrediction, PendingLabel, PendingPrediction
from monitor.storage.base import utcnow
from monitor.summaries import add_joined


def join_labels(
    session: Session,
    predictions: EventTable,
    labels: Sequence[LabelEvent],
    models: dict[str, ModelConfig],
    horizon_s: float,
    window_s: float,
) -> int:
    """Store predictions and labels, move matches to labeled_predictions; returns matches.

    Matches are also added to their windows' outcome summaries (monitor/summaries.py) in this
    transaction; a pair that replaces an earlier joined pair of its request id first removes
    that pair's contribution, so summaries count each request once.
    """
    matched = 0
    for model in set(predictions.model) | {e.model for e in labels}:
        preds = _prediction_rows(predictions, model, models[model])
        labs = {e.request_id: e for e in labels if e.model == model}
        pairs = _join_model(session, model, preds, labs)
        _summarize(session, model, pairs, models[model], window_s)
        matched += len(pairs)
        newest = max([p["ts"] for p in preds.values()] + [utc(e.ts) for e in labs.values()])
        _expire(session, model, newest.timestamp() - horizon_s)
    return matched


def _prediction_rows(
    table: EventTable, model: str, config: ModelConfig
) -> dict[str, dict[str, Any]]:
    """Rows to store per request id of `model` (a repeated id: the later event wins)."""
    rows = range(len(table)) if set(table.model) == {model} else [
        i for i, m in enumerate(table.model) if m == model
    ]  # fmt: skip
    slices = {c: slice_source(table, c) for c in config.slices}
    ts = table.ts.tolist()
    return {
        table.request_id[i]: {
            "model": model,
            "request_id": table.request_id[i],
            "version": table.version[i],
            "ts": utc(ts[i]),
            "prediction": table.prediction[i],
            "slice_values": {c: values[i] for c, values in slices.items()},
        }
        for i in rows
    }


def _join_model(
    session: Session,
    model: str,
    preds: dict[str, dict[str, Any]],
    labs: dict[str, LabelEvent],
) -> list[dict[str, Any]]:
    """Pairs completed by this batch: within it, and against the waiting rooms (set-based)."""
    pairs = [{**record, "label": labs[rid].label} for rid, record in preds.items() if rid in labs]
    waiting_preds = {rid: p for rid, p in preds.items() if rid not in labs}
    waiting_labels = {rid: lab for rid, lab in labs.items() if rid not in preds}
    enc = ts_encoder(session)
    bulk.upsert(
        session,
        "pending_predictions",
        _PRED_COLUMNS,
        _KEYS,
        [_pending_prediction(model, p, enc) for p in waiting_preds.values()],
    )
    bulk.upsert(
        session,
        "pending_labels",
        _LABEL_COLUMNS,
        _KEYS,
        [(model, rid, json_text(e.label), enc(utc(e.ts))) for rid, e in waiting_labels.items()],
    )
    pairs += _completed(session, model, [*waiting_preds, *waiting_labels])
    now = utcnow()
    return [{**p, "joined_at": now} for p in pairs]


_KEYS = ("model", "request_id")
_PRED_COLUMNS = ("model", "request_id", "version", "ts", "prediction", "slice_values")
_LABEL_COLUMNS = ("model", "request_id", "label", "ts")
_PAIR_COLUMNS = ("request_id", "version", "ts", "prediction", "label", "slice_values")
_JOINED_COLUMNS = ("model", *_PAIR_COLUMNS, "joined_at")


def _pending_prediction(
    model: str, p: dict[str, Any], enc: Callable[[datetime], Any]
) -> tuple[Any, ...]:
    prediction, slices = json_text(p["prediction"]), json_text(p["slice_values"])
    return (model, p["request_id"], p["version"], enc(p["ts"]), prediction, slices)


def _completed(session: Session, model: str, ids: Sequence[str]) -> list[dict[str, Any]]:
    """Pairs of `ids` now waiting in both rooms (one join), removed from both rooms."""
    if not ids:
        return []
    p, lab = PendingPrediction.__table__.c, PendingLabel.__table__.c
    stmt = (
        select(p.request_id, p.version, p.ts, p.prediction, lab.label, p.slice_values)
        .join_from(
            PendingPrediction.__table__,
            PendingLabel.__table__,
            (lab.model == p.model) & (lab.request_id == p.request_id),
        )
        .where(p.model == model, bulk.in_ids(session, "pending_predictions.request_id", ids))
    )
    pairs = [
        {"model": model, **dict(zip(_PAIR_COLUMNS, row, strict=True))}
        for row in session.execute(stmt)
    ]
    done = [pair["request_id"] for pair in pairs]
    if done:
        for table in (PendingPrediction, PendingLabel):
            session.execute(
                delete(table)
                .where(
                    table.model == model,
                    bulk.in_ids(session, f"{table.__tablename__}.request_id", done),
                )
                .execution_options(synchronize_session=False)
            )
    return pairs


def _summarize(
    session: Session,
    model: str,
    pairs: list[dict[str, Any]],
    config: ModelConfig,
    window_s: float,
) -> None:
    """Swap replaced joined pairs for the new ones, in the rows and in the summaries."""
    if not pairs:
        return
    table = LabeledPrediction.__table__
    ids = [p["request_id"] for p in pairs]
    stmt = select(*(table.c[c] for c in _PAIR_COLUMNS[1:])).where(
        table.c.model == model, bulk.in_ids(session, "labeled_predictions.request_id", ids)
    )
    old = [dict(zip(_PAIR_COLUMNS[1:], row, strict=True)) for row in session.execute(stmt)]
    add_joined(session, model, old, config, window_s, sign=-1)
    add_joined(session, model, pairs, config, window_s)
    enc = ts_encoder(session)
    rows = [
        (model, p["request_id"], p["version"], enc(p["ts"]), json_text(p["prediction"]),
         json_text(p["label"]), json_text(p["slice_values"]), enc(p["joined_at"]))
        for p in pairs
    ]  # fmt: skip
    bulk.upsert(session, "labeled_predictions", _JOINED_COLUMNS, _KEYS, rows)


def _expire(session: Session, model: str, before: float) -> None:
    cutoff = utc(max(before, 0.0))
    for table in (PendingPrediction, PendingLabel):
        session.execute(
            delete(table)
            .where(table.model == model, table.ts < cutoff)
            .execution_options(synchronize_session=False)
        )
