"""Time partitions of the large tables on PostgreSQL: which tables, created ahead, dropped whole.

On PostgreSQL the tables that grow with traffic are range-partitioned by a time column
(migration 0035); SQLite keeps plain tables and every function here does nothing there, so
callers take one code path on both backends.

- Each partitioned table has a DEFAULT partition: a row whose partition does not exist (an old
  event's window, a clock far ahead) is stored there, never refused, and `create_partition`
  later moves it into its own partition, created on demand. Writes never run DDL.
- `missing_periods` also lists the next `AHEAD` periods, created before they begin, so the
  DEFAULT partition normally stays empty and a move never holds up live writes.
- `drop_expired` drops a whole partition once its range ended before the retention cutoff and no
  row in it was written since: a backfill of old traffic is kept, as row retention keeps it.

Partitions are named `<table>_p<YYYYMMDD>` (daily) or `<table>_p<YYYYMM>` (monthly) and
`<table>_default`; the name is the bound, so no catalogue expression is parsed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from monitor.storage.base import utcnow

# How long maintenance waits for a table lock before giving up until its next run: a queued
# ACCESS EXCLUSIVE request would stall every reader and writer of the table behind it.
LOCK_TIMEOUT = "2s"
# What a new partition copies of its parent before it is attached (ATTACH requires the
# parent's NOT NULL and CHECK constraints; compression and storage keep migration 0025's lz4).
_SHAPE = "INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING COMPRESSION INCLUDING STORAGE"


@dataclass(frozen=True)
class PartitionSpec:
    """A partitioned table: its key (event time), the column retention ages rows by, the step."""

    table: str
    key: str
    written: str
    step: str  # "day" or "month"

    def __post_init__(self) -> None:
        if self.step not in AHEAD:
            raise ValueError(f"partition step {self.step!r} of {self.table}: not one of {AHEAD}")


# Periods created ahead of now, per step.
AHEAD: dict[str, int] = {"day": 7, "month": 2}

# Daily where a day holds millions of rows at fleet scale (one per window, slice and column,
# times methods for drift; one per labeled prediction); monthly where rows are fewer (outcome
# metrics, dead letters).
PARTITIONED: dict[str, PartitionSpec] = {
    s.table: s
    for s in (
        PartitionSpec("window_profiles", "window_start", "updated_at", "day"),
        PartitionSpec("drift_results", "window_start", "computed_at", "day"),
        PartitionSpec("outcome_results", "window_start", "computed_at", "month"),
        PartitionSpec("dead_letters", "created_at", "created_at", "month"),
        PartitionSpec("labeled_predictions", "ts", "joined_at", "day"),
    )
}


def period_start(step: str, t: datetime) -> datetime:
    """The start (UTC) of the day or month holding `t`."""
    t = t.astimezone(UTC)
    day = t.replace(hour=0, minute=0, second=0, microsecond=0)
    return day if step == "day" else day.replace(day=1)


def next_start(step: str, start: datetime) -> datetime:
    """The start of the period after the one starting at `start`."""
    if step == "day":
        return start + timedelta(days=1)
    return (start.replace(day=28) + timedelta(days=4)).replace(day=1)


def partition_name(spec: PartitionSpec, start: datetime) -> str:
    """The name of `spec.table`'s partition starting at `start`."""
    return f"{spec.table}_p{start.strftime('%Y%m%d' if spec.step == 'day' else '%Y%m')}"


_PARTITION_NAME = re.compile(r"(?P<table>\w+)_(?:default|p\d{8}|p\d{6})")


def partition_of(name: str) -> str | None:
    """The partitioned table that a table named `name` is a partition of, else None."""
    match = _PARTITION_NAME.fullmatch(name)
    return match["table"] if match and match["table"] in PARTITIONED else None


def include_name(name: str | None, type_: str, _parents: Any = None) -> bool:
    """Alembic's `include_name` hook: partitions are not tables of the ORM models."""
    return not (type_ == "table" and name is not None and partition_of(name))


def is_partitioned(conn: Connection, table: str) -> bool:
    """Whether `table` is a partitioned table here (never on SQLite)."""
    if conn.dialect.name != "postgresql":
        return False
    found = conn.scalar(
        text(
            "SELECT EXISTS (SELECT 1 FROM pg_partitioned_table p JOIN pg_class c "
            "ON c.oid = p.partrelid WHERE c.relname = :t AND pg_table_is_visible(c.oid))"
        ),
        {"t": table},
    )
    return bool(found)


def partitions(conn: Connection, spec: PartitionSpec) -> dict[str, tuple[datetime, datetime]]:
    """The range partitions of `spec.table` by name, with their bounds `[start, end)`."""
    names = conn.scalars(
        text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = CAST(:t AS regclass)"
        ),
        {"t": spec.table},
    )
    pattern = re.compile(rf"{re.escape(spec.table)}_p(\d{{8}}|\d{{6}})")
    found: dict[str, tuple[datetime, datetime]] = {}
    for name in names:
        match = pattern.fullmatch(name)
        if match:
            digits = match.group(1)
            start = datetime.strptime(digits, "%Y%m%d" if len(digits) == 8 else "%Y%m")
            start = start.replace(tzinfo=UTC)
            found[name] = (start, next_start(spec.step, start))
    return found


def _literal(t: datetime) -> str:
    # DDL takes no bound parameters; the value is a datetime we formatted, never user text.
    return f"'{t.astimezone(UTC).isoformat()}'"


def ensure_partition(conn: Connection, spec: PartitionSpec, start: datetime) -> bool:
    """Create the partition starting at `start` unless it exists, moving into it the rows the
    DEFAULT partition holds for its range; True if created."""
    name = partition_name(spec, start)
    if name in partitions(conn, spec):
        return False
    low, high = _literal(start), _literal(next_start(spec.step, start))
    t, key, default = spec.table, spec.key, f"{spec.table}_default"
    conn.execute(text(f'LOCK TABLE "{default}" IN ACCESS EXCLUSIVE MODE'))
    conn.execute(text(f'CREATE TABLE "{name}" (LIKE "{t}" {_SHAPE})'))
    conn.execute(
        text(
            f'WITH moved AS (DELETE FROM "{default}" WHERE "{key}" >= {low} AND "{key}" < {high} '
            f'RETURNING *) INSERT INTO "{name}" SELECT * FROM moved'
        )
    )
    conn.execute(
        text(f'ALTER TABLE "{t}" ATTACH PARTITION "{name}" FOR VALUES FROM ({low}) TO ({high})')
    )
    return True


def _lock(conn: Connection, spec: PartitionSpec) -> None:
    """On a live database: one maintainer per table at a time (replicas), and never a long
    wait for a lock."""
    conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    conn.execute(
        text("SELECT pg_advisory_xact_lock(hashtext(:t))"), {"t": f"partitions:{spec.table}"}
    )


def missing_periods(conn: Connection, spec: PartitionSpec, now: datetime) -> list[datetime]:
    """The starts of the periods that need a partition: the coming ones (`AHEAD`) and those of
    rows waiting in the DEFAULT partition. None on plain tables."""
    if not is_partitioned(conn, spec.table):
        return []
    waiting = conn.scalars(
        text(
            f"SELECT DISTINCT date_trunc('{spec.step}', \"{spec.key}\" AT TIME ZONE 'UTC') "
            f'FROM "{spec.table}_default"'
        )
    )
    starts = {t.replace(tzinfo=UTC) for t in waiting}
    start = period_start(spec.step, now)
    for _ in range(AHEAD[spec.step] + 1):
        starts.add(start)
        start = next_start(spec.step, start)
    have = {s for s, _ in partitions(conn, spec).values()}
    return sorted(starts - have)


def create_partition(conn: Connection, spec: PartitionSpec, start: datetime) -> bool:
    """`ensure_partition` on a live database: its own transaction (the caller's), a bounded
    wait for locks and one maintainer at a time."""
    _lock(conn, spec)
    return ensure_partition(conn, spec, start)


def drop_expired(conn: Connection, spec: PartitionSpec, cutoff: datetime) -> int:
    """Drop the partitions whose range ended by `cutoff` and that hold no row written since;
    returns the rows they held. Nothing on plain tables."""
    if not is_partitioned(conn, spec.table):
        return 0
    _lock(conn, spec)
    rows: dict[str, int] = {}
    for name, (_, end) in sorted(partitions(conn, spec).items()):
        if end > cutoff:
            continue
        # No write may land between the look and the drop; other partitions stay writable.
        conn.execute(text(f'LOCK TABLE "{name}" IN SHARE MODE'))
        total, fresh = conn.execute(
            text(
                f'SELECT count(*), count(*) FILTER (WHERE "{spec.written}" >= :cutoff) '
                f'FROM "{name}"'
            ),
            {"cutoff": cutoff},
        ).one()
        if fresh == 0:
            rows[name] = int(total)
    # Dropping a partition locks the whole table: only now, briefly, after every scan.
    for name in rows:
        conn.execute(text(f'DROP TABLE "{name}"'))
    return sum(rows.values())


# How far back the newest window is looked for first: on PostgreSQL a bound on the partition key
# reads only the partitions from then on (the recent day or two, those created ahead, DEFAULT),
# not one per day of retention. Only a model with no window that recent reads them all.
RECENT = timedelta(days=2)


def newest_query(column: Any, conds: Sequence[Any], since: datetime | None) -> Any:
    """`max(column)` of the rows matching `conds` (and from `since` on, when given)."""
    bound = [] if since is None else [column >= since]
    return select(func.max(column)).where(*conds, *bound)


def newest(
    session: Session, column: Any, conds: Sequence[Any], now: datetime | None = None
) -> datetime | None:
    """The newest `column` (a partition key) of the rows matching `conds`: among the `RECENT`
    rows first (the same answer whenever there is one), else among all."""
    found: datetime | None = session.scalar(newest_query(column, conds, (now or utcnow()) - RECENT))
    if found is None:
        found = session.scalar(newest_query(column, conds, None))
    return found
