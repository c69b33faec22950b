"""Stored slice keys in the one slice-key format (monitor/profiles/slicekeys.py).

Revision ID: 0009_slice_keys
Revises: 0008_thresholds
Create Date: 2026-12-02

Before this revision baselines wrote `{"c":"True"}`, `{"c":"(other)"}` and windows
`{"c":"true"}`, `{"c":"3.0"}`, `{"c":"__other__"}`, so a slice never met its baseline. Every
table that stores slice keys (and the per-slice row counts in `baselines.settings`) is rewritten:
`True`/`False` -> `true`/`false`, integral float text (`3.0`) -> `3`, `__other__` -> `(other)`.
A rewritten key that would collide with an existing row of the same identity is left as it was
(nothing is deleted). Downgrade keeps the canonical keys: older code reads them as plain text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0009_slice_keys"
down_revision = "0008_thresholds"
branch_labels = None
depends_on = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_INTEGRAL_FLOAT = re.compile(r"^-?\d{1,16}\.0+$")
_TEXT = {"True": "true", "False": "false", "__other__": "(other)"}

# table -> the columns that, with slice_key, identify a row
_TABLES = {
    "window_profiles": ("model", "version", "window_start", "column"),
    "window_counts": ("model", "version", "window_start"),
    "baseline_profiles": ("baseline_id", "column"),
    "drift_results": ("model", "version", "window_start", "column", "method"),
    "outcome_results": ("model", "version", "window_start", "metric"),
}


def canonical(key: str) -> str:
    """An old-format slice key in the one format ("" and unparsable keys unchanged)."""
    if not key:
        return key
    try:
        data = json.loads(key)
    except ValueError:
        return key
    if not isinstance(data, dict):
        return key
    out = {}
    for column, value in data.items():
        text = value if isinstance(value, str) else json.dumps(value)
        text = _TEXT.get(text, text)
        if _INTEGRAL_FLOAT.match(text):
            text = str(int(text.split(".")[0]))  # "-0.0" -> "0", as value_text(-0.0)
        out[str(column)] = text
    return json.dumps(out, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def upgrade() -> None:
    bind = op.get_bind()
    for name, ident in _TABLES.items():
        _rewrite(bind, name, ident)
    _rewrite_baseline_rows(bind)


def _rewrite(bind: sa.engine.Connection, name: str, ident: tuple[str, ...]) -> None:
    table = sa.table(name, *(sa.column(c) for c in (*ident, "slice_key")))
    rows = bind.execute(sa.select(*table.c).where(table.c.slice_key != "")).all()
    taken = {tuple(r) for r in rows}
    for row in rows:
        *rest, old = tuple(row)
        new = canonical(old)
        if new == old or (*rest, new) in taken:
            continue
        where = sa.and_(*(table.c[c] == v for c, v in zip(ident, rest, strict=True)))
        bind.execute(sa.update(table).where(where, table.c.slice_key == old).values(slice_key=new))
        taken.add((*rest, new))


def _rewrite_baseline_rows(bind: sa.engine.Connection) -> None:
    table = sa.table("baselines", sa.column("id"), sa.column("settings", JSON_DOC))
    for ident, settings in bind.execute(sa.select(table.c.id, table.c.settings)).all():
        rows = (settings or {}).get("rows")
        if not isinstance(rows, dict):
            continue
        fixed = _merge_counts((canonical(str(k)), v) for k, v in rows.items())
        if fixed != rows:
            new_settings = {**settings, "rows": fixed}
            bind.execute(sa.update(table).where(table.c.id == ident).values(settings=new_settings))


def _merge_counts(items: Iterable[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in items:
        before = out.get(key)
        both = isinstance(before, int) and isinstance(value, int)
        out[key] = before + value if both else value  # type: ignore[operator]
    return out


def downgrade() -> None:
    """Canonical keys stay: they are valid keys for the code before this revision too."""
