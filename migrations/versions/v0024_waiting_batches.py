"""The label join's waiting rooms stored a batch at a time.

Revision ID: 0024_waiting_batches
Revises: 0023_waiting_columns
Create Date: 2026-12-02

A waiting prediction or label was one row of `pending_predictions` / `pending_labels`; inserting
and taking one text-keyed row per entry cost more than the join's budget. Now one row of
`waiting_batches` holds a batch of entries of one (model, room) — `keys` (int64 stable hashes
of the request ids), `body` (their columns), `used` (a bitmap of entries taken), `open` (how
many are not) — found through an in-memory index (collectors/_rooms.py owns the format, this
revision writes it as it stood); `waiting_heads` holds a per-model counter whose row lock
serialises the joins of a model. The old rows are converted into batch rows of up to 5,000
entries (in request-id order) and back on downgrade (entries taken are dropped).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import orjson
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0024_waiting_batches"
down_revision = "0023_waiting_columns"
branch_labels = None
depends_on = None

JSON_OR_NULL = sa.JSON(none_as_null=True).with_variant(
    postgresql.JSONB(none_as_null=True), "postgresql"
)
_CHUNK = 5_000
_EXACT = 2**53
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_HEADER = struct.Struct("<I")
_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)
_MIX = (np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53))
_ROOMS = {"prediction": "pending_predictions", "label": "pending_labels"}


def _hashes(ids: list[str]) -> bytes:
    """The collector's stable request-id hashes (FNV-1a over code points, then a finaliser)."""
    codes = np.array(ids, dtype=str)
    points = codes.view(np.uint32).reshape(len(ids), -1)
    h = np.full(len(ids), _FNV_OFFSET, np.uint64)
    with np.errstate(over="ignore"):
        for column in points.T:  # padding (code point 0) past an id's end changes nothing
            h = np.where(column != 0, (h ^ column) * _FNV_PRIME, h)
        h ^= np.char.str_len(codes).astype(np.uint64)
        for mix in _MIX:
            h ^= h >> np.uint64(33)
            h *= mix
        h ^= h >> np.uint64(33)
    return h.astype("<u8").tobytes()


def _value(num: Any, text: Any, doc: Any) -> Any:
    return num if num is not None else text if text is not None else doc


def _body(rows: list[Any], room: str) -> bytes:
    """Entries -> the stored body: 4-byte length, JSON header, int64 µs times, float64 numbers."""
    values = [_value(r.num, r.text, r.doc) for r in rows]
    numbers = np.full(len(rows), np.nan)
    other: list[Any] = []
    for i, v in enumerate(values):
        if type(v) is float or (type(v) is int and -_EXACT <= v <= _EXACT):
            numbers[i] = v
            other.append(None)
        else:
            other.append([] if v is None else [v])
    header: dict[str, Any] = {"rid": [r.request_id for r in rows], "sv": {}}
    header["other"] = None if all(o is None for o in other) else other
    if room == "prediction":
        header["ver"] = [r.version for r in rows]
        texts = [orjson.loads(r.slice_values) if r.slice_values else {} for r in rows]
        names = list(dict.fromkeys(c for t in texts for c in t))
        header["sv"] = {c: [t.get(c) for t in texts] for c in names}
    doc = orjson.dumps(header, option=_OPTIONS)
    stamps = np.asarray([r.ts for r in rows], "<i8").tobytes()
    return _HEADER.pack(len(doc)) + doc + stamps + numbers.astype("<f8").tobytes()


def _old(room: str) -> sa.TableClause:
    name = "prediction" if room == "prediction" else "label"
    columns = [
        sa.column("model"), sa.column("request_id"), sa.column("ts"),
        sa.column(f"{name}_num"), sa.column(f"{name}_text"), sa.column(name, JSON_OR_NULL),
    ]  # fmt: skip
    if room == "prediction":
        columns += [sa.column("version"), sa.column("slice_values")]
    return sa.table(_ROOMS[room], *columns)


def _batches() -> sa.TableClause:
    names = ("id", "model", "room", "n", "open", "ts_min", "ts_max", "keys", "body", "used")
    return sa.table("waiting_batches", *(sa.column(c) for c in names))


def _convert_up(room: str) -> None:
    conn = op.get_bind()
    old, name = _old(room), "prediction" if room == "prediction" else "label"
    picked = [
        old.c.model, old.c.request_id, old.c.ts, old.c[f"{name}_num"].label("num"),
        old.c[f"{name}_text"].label("text"), old.c[name].label("doc"),
    ]  # fmt: skip
    if room == "prediction":
        picked += [old.c.version, old.c.slice_values]
    rows = conn.execute(sa.select(*picked).order_by(old.c.model, old.c.request_id)).all()
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        for model in dict.fromkeys(r.model for r in chunk):
            part = [r for r in chunk if r.model == model]
            n = len(part)
            conn.execute(
                _batches().insert(),
                {
                    "model": model, "room": room, "n": n, "open": n,
                    "ts_min": min(r.ts for r in part), "ts_max": max(r.ts for r in part),
                    "keys": _hashes([r.request_id for r in part]), "body": _body(part, room),
                    "used": bytes((n + 7) // 8),
                },
            )  # fmt: skip


def upgrade() -> None:
    op.create_table(
        "waiting_batches",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True,
            nullable=False,
        ),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("room", sa.String(length=20), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("open", sa.Integer(), nullable=False),
        sa.Column("ts_min", sa.BigInteger(), nullable=False),
        sa.Column("ts_max", sa.BigInteger(), nullable=False),
        sa.Column("keys", sa.LargeBinary(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("used", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_waiting_batches")),
        sqlite_autoincrement=True,
    )  # fmt: skip
    op.create_index("ix_waiting_batches_model_room_id", "waiting_batches", ["model", "room", "id"])
    op.create_index("ix_waiting_batches_model_ts_max", "waiting_batches", ["model", "ts_max"])
    op.create_table(
        "waiting_heads",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("model", name=op.f("pk_waiting_heads")),
    )
    for room, table in _ROOMS.items():
        _convert_up(room)
        op.drop_index(f"ix_{table}_model_ts", table_name=table)
        op.drop_table(table)


def _entries(row: Any) -> list[dict[str, Any]]:
    """A batch row -> its entries not taken, as rows of the old table."""
    body = bytes(row.body)
    (size,) = _HEADER.unpack_from(body)
    header = orjson.loads(body[_HEADER.size : _HEADER.size + size])
    rids, other, slices = header["rid"], header["other"], header["sv"]
    n, start = len(rids), _HEADER.size + size
    stamps = np.frombuffer(body, "<i8", n, start).tolist()
    numbers = np.frombuffer(body, "<f8", n, start + 8 * n).tolist()
    used = np.unpackbits(np.frombuffer(bytes(row.used), np.uint8), count=n).tolist()
    name = "prediction" if row.room == "prediction" else "label"
    out = []
    for i in range(n):
        if used[i]:
            continue
        value = numbers[i] if other is None or other[i] is None else (other[i] or [None])[0]
        entry = {"model": row.model, "request_id": rids[i], "ts": stamps[i]}
        entry |= {f"{name}_num": None, f"{name}_text": None, name: None}
        if type(value) is float:
            entry[f"{name}_num"] = value
        elif type(value) is str:
            entry[f"{name}_text"] = value
        else:
            entry[name] = value
        if row.room == "prediction":
            entry["version"] = header["ver"][i]
            values = {c: v[i] for c, v in slices.items()}
            entry["slice_values"] = orjson.dumps(values, option=_OPTIONS).decode()
        out.append(entry)
    return out


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


def downgrade() -> None:
    op.create_table(
        "pending_predictions",
        *_keys(),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        *_typed("prediction"),
        sa.Column("slice_values", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("model", "request_id", name=op.f("pk_pending_predictions")),
    )
    op.create_table(
        "pending_labels",
        *_keys(),
        *_typed("label"),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("model", "request_id", name=op.f("pk_pending_labels")),
    )
    for table in _ROOMS.values():
        op.create_index(f"ix_{table}_model_ts", table, ["model", "ts"])
    conn = op.get_bind()
    source = sa.table("waiting_batches", *(sa.column(c) for c in ("model", "room", "body")))
    source.append_column(sa.column("used"))
    source.append_column(sa.column("id"))
    for row in conn.execute(sa.select(source).order_by(source.c.id)).all():
        entries = _entries(row)
        if entries:
            target = _old(row.room)
            for entry in entries:  # later batches replace earlier entries of an id
                conn.execute(target.delete().where(
                    target.c.model == entry["model"], target.c.request_id == entry["request_id"]
                ))  # fmt: skip
            conn.execute(target.insert(), entries)
    op.drop_table("waiting_heads")
    op.drop_index("ix_waiting_batches_model_ts_max", table_name="waiting_batches")
    op.drop_index("ix_waiting_batches_model_room_id", table_name="waiting_batches")
    op.drop_table("waiting_batches")
