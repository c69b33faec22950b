"""The label join, inside the batch transaction.

Predictions wait in `pending_predictions`, labels that came first in `pending_labels`; a match in
either direction moves the pair to `labeled_predictions` (drill-down data) and adds it to its
window's outcome summaries (the input of per-slice outcome metrics). Both waiting rooms are
emptied of entries older than the label horizon, judged in event time against the newest event
of the model in the batch. A repeated request id replaces the earlier entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from collectors.base import LabelEvent
from collectors.table import EventTable
from collectors.validate import utc
from collectors.windows import slice_source
from monitor.config import ModelConfig
from monitor.storage import LabeledPrediction, PendingLabel, PendingPrediction
from monitor.storage.base import utcnow
from monitor.summaries import add_joined


def _chunks(items: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _pending(session: Session, table: Any, model: str, ids: Sequence[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for chunk in _chunks(ids):
        stmt = select(table).where(table.model == model, table.request_id.in_(chunk))
        found.update({row.request_id: row for row in session.execute(stmt).scalars()})
    return found


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
    waiting_labels = _pending(session, PendingLabel, model, [i for i in preds if i not in labs])
    waiting_preds = _pending(session, PendingPrediction, model, [i for i in labs if i not in preds])
    pairs: list[dict[str, Any]] = []
    new_preds: list[dict[str, Any]] = []
    for rid, record in preds.items():
        if rid in labs:
            pairs.append({**record, "label": labs[rid].label})
        elif rid in waiting_labels:
            pairs.append({**record, "label": waiting_labels[rid].label})
        else:
            new_preds.append(record)
    new_labels: list[dict[str, Any]] = []
    for rid, lab in labs.items():
        pending = waiting_preds.get(rid)
        if rid in preds:
            continue
        if pending is None:
            new_labels.append(
                {"model": model, "request_id": rid, "label": lab.label, "ts": utc(lab.ts)}
            )
            continue
        pairs.append(
            {
                "model": model,
                "request_id": rid,
                "version": pending.version,
                "ts": pending.ts,
                "prediction": pending.prediction,
                "label": lab.label,
                "slice_values": pending.slice_values,
            }
        )
    now = utcnow()
    _delete_ids(session, PendingLabel, model, list(waiting_labels))
    _delete_ids(session, PendingPrediction, model, list(waiting_preds))
    _replace(session, PendingPrediction, model, new_preds)
    _replace(session, PendingLabel, model, new_labels)
    pairs = [{**p, "joined_at": now} for p in pairs]
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
    ids = [p["request_id"] for p in pairs]
    replaced = list(_pending(session, LabeledPrediction, model, ids).values())
    old = [
        {c: getattr(r, c) for c in ("version", "ts", "prediction", "label", "slice_values")}
        for r in replaced
    ]
    add_joined(session, model, old, config, window_s, sign=-1)
    add_joined(session, model, pairs, config, window_s)
    _replace(session, LabeledPrediction, model, pairs)


def _delete_ids(session: Session, table: Any, model: str, ids: Sequence[str]) -> None:
    for chunk in _chunks(ids):
        session.execute(
            delete(table)
            .where(table.model == model, table.request_id.in_(chunk))
            .execution_options(synchronize_session=False)
        )


def _replace(session: Session, table: Any, model: str, rows: list[dict[str, Any]]) -> None:
    """Insert rows, replacing any with the same (model, request_id): one upsert executemany."""
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    upsert_insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = upsert_insert(table.__table__)
    keep = [c for c in rows[0] if c not in ("model", "request_id")]
    stmt = stmt.on_conflict_do_update(
        index_elements=["model", "request_id"], set_={c: stmt.excluded[c] for c in keep}
    )
    session.execute(stmt, rows)


def _expire(session: Session, model: str, before: float) -> None:
    cutoff = utc(max(before, 0.0))
    for table in (PendingPrediction, PendingLabel):
        session.execute(
            delete(table)
            .where(table.model == model, table.ts < cutoff)
            .execution_options(synchronize_session=False)
        )
