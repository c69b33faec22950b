"""The label join's waiting rooms without JSON where the values allow it.

Revision ID: 0023_waiting_columns
Revises: 0022_failure_windows
Create Date: 2026-12-01

A prediction waiting for its label (`pending_predictions`) and a label waiting for its
prediction (`pending_labels`) were stored as JSON with a timestamp; the join writes and takes
back thousands of them per batch, and the JSON and time encoding was most of its cost. Now:

- the value in `<name>_num` (a number: a float, or an int of at most 2**53 in magnitude, as a
  float), `<name>_text` (a string), or the JSON column `<name>` (anything else, now nullable);
  all three NULL is None;
- `ts` as integer microseconds since the epoch;
- a prediction's `slice_values` as the JSON text of {slice column: value} in a TEXT column.

Both tables are rebuilt (renamed aside, created anew, rows copied over converted in chunks,
the old table dropped), so waiting entries survive the upgrade and the downgrade.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from monitor.storage.base import UTCDateTime

revision = "0023_waiting_columns"
down_revision = "0022_failure_windows"
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
# The new, nullable JSON columns: None is SQL NULL (the collector reads NULL in all three
# value columns as None), not the JSON text "null".
JSON_OR_NULL = sa.JSON(none_as_null=True).with_variant(
    postgresql.JSONB(none_as_null=True), "postgresql"
)
_CHUNK = 10_000
_EXACT = 2**53
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
_KEYS = ("model", "request_id")


def _typed(name: str) -> list[sa.Column[Any]]:
    return [
        sa.Column(f"{name}_num", sa.Float(), nullable=True),
        sa.Column(f"{name}_text", sa.Text(), nullable=True),
        sa.Column(name, JSON_OR_NULL, nullable=True),
    ]


def _keys() -> list[sa.Column[Any]]:
    return [
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("request_id", sa.String(length=200), nullable=False),
    ]


def _new_predictions() -> list[sa.Column[Any]]:
    return [
        *_keys(),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        *_typed("prediction"),
        sa.Column("slice_values", sa.Text(), nullable=False),
    ]


def _new_labels() -> list[sa.Column[Any]]:
    return [*_keys(), *_typed("label"), sa.Column("ts", sa.BigInteger(), nullable=False)]


def _old_predictions() -> list[sa.Column[Any]]:
    return [
        *_keys(),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("prediction", JSON_DOC, nullable=False),
        sa.Column("slice_values", JSON_DOC, nullable=False),
    ]


def _old_labels() -> list[sa.Column[Any]]:
    return [
        *_keys(),
        sa.Column("label", JSON_DOC, nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
    ]


def _split(value: Any) -> tuple[Any, Any, Any]:
    """A value -> (number, string, JSON document) columns, as the collector stores it."""
    if type(value) is float or (type(value) is int and -_EXACT <= value <= _EXACT):
        return float(value), None, None
    if type(value) is str:
        return None, value, None
    return None, None, value


def _joined(num: Any, text: Any, doc: Any) -> Any:
    return num if num is not None else text if text is not None else doc


def _micros(ts: datetime) -> int:
    return (ts - _EPOCH) // _MICRO


def _datetime(micros: int) -> datetime:
    return _EPOCH + micros * _MICRO


def _slice_text(values: Any) -> str:
    return json.dumps(values or {}, separators=(",", ":"), ensure_ascii=False)


def _slice_doc(text: str | None) -> Any:
    return json.loads(text) if text else {}


def _prediction_up(row: Any) -> dict[str, Any]:
    num, text, doc = _split(row.prediction)
    return {
        "model": row.model,
        "request_id": row.request_id,
        "version": row.version,
        "ts": _micros(row.ts),
        "prediction_num": num,
        "prediction_text": text,
        "prediction": doc,
        "slice_values": _slice_text(row.slice_values),
    }


def _label_up(row: Any) -> dict[str, Any]:
    num, text, doc = _split(row.label)
    key = {"model": row.model, "request_id": row.request_id, "ts": _micros(row.ts)}
    return key | {"label_num": num, "label_text": text, "label": doc}


def _prediction_down(row: Any) -> dict[str, Any]:
    return {
        "model": row.model,
        "request_id": row.request_id,
        "version": row.version,
        "ts": _datetime(row.ts),
        "prediction": _joined(row.prediction_num, row.prediction_text, row.prediction),
        "slice_values": _slice_doc(row.slice_values),
    }


def _label_down(row: Any) -> dict[str, Any]:
    return {
        "model": row.model,
        "request_id": row.request_id,
        "label": _joined(row.label_num, row.label_text, row.label),
        "ts": _datetime(row.ts),
    }


Columns = Callable[[], list[sa.Column[Any]]]


def _rebuild(
    name: str, old_columns: Columns, new_columns: Columns, convert: Callable[[Any], dict[str, Any]]
) -> None:
    """Put table `name` aside, create it with `new_columns`, copy its rows over converted."""
    aside = f"{name}_0023"
    op.drop_index(f"ix_{name}_model_ts", table_name=name)
    op.rename_table(name, aside)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE {aside} RENAME CONSTRAINT pk_{name} TO pk_{aside}")
    op.create_table(name, *new_columns(), sa.PrimaryKeyConstraint(*_KEYS, name=op.f(f"pk_{name}")))
    op.create_index(f"ix_{name}_model_ts", name, ["model", "ts"])
    _copy(_clause(aside, old_columns()), _clause(name, new_columns()), convert)
    op.drop_table(aside)


def _clause(name: str, columns: Sequence[sa.Column[Any]]) -> sa.TableClause:
    """A lightweight table to read and write with (aware UTC datetimes on every backend)."""
    kinds = [UTCDateTime() if isinstance(c.type, sa.DateTime) else c.type for c in columns]
    return sa.table(name, *(sa.column(c.name, k) for c, k in zip(columns, kinds, strict=True)))


def _copy(
    source: sa.TableClause, target: sa.TableClause, convert: Callable[[Any], dict[str, Any]]
) -> None:
    """All rows of `source` into `target`, converted, a chunk at a time in key order."""
    conn = op.get_bind()
    last: tuple[str, str] | None = None
    while True:
        stmt = sa.select(source).order_by(source.c.model, source.c.request_id).limit(_CHUNK)
        if last is not None:
            stmt = stmt.where(sa.tuple_(source.c.model, source.c.request_id) > sa.tuple_(*last))
        rows = conn.execute(stmt).all()
        if not rows:
            return
        conn.execute(target.insert(), [convert(row) for row in rows])
        last = (rows[-1].model, rows[-1].request_id)


def upgrade() -> None:
    _rebuild("pending_predictions", _old_predictions, _new_predictions, _prediction_up)
    _rebuild("pending_labels", _old_labels, _new_labels, _label_up)


def downgrade() -> None:
    _rebuild("pending_predictions", _new_predictions, _old_predictions, _prediction_down)
    _rebuild("pending_labels", _new_labels, _old_labels, _label_down)
