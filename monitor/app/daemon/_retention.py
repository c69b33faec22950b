"""Retention: delete rows not written for `scheduler.retention_days`.

Age is the time a row was last written, not its event time, so a backfill of old traffic is kept
for the whole period. Windows (profiles, counts, outcome and shadow-pair summaries, change
markers, drift, outcome and estimated results), scheduled canary, skew and segment runs, joined
predictions (after `scheduler.labeled_retention_days`, default 14: they are drill-down data,
metrics come from the summaries), dead letters, delivered or dead notifications, finished job
runs, and the positions of HTTP idempotency keys and of replicas' own HTTP keys. Positions of
Kafka partitions and log files are never deleted: they are what makes a restart exactly-once.
Consumed HTTP intake requests are kept for `collect.http_dedup_window` (default 1 day), measured
from when the drain consumed them: that long a retry with the same Idempotency-Key is answered
as a duplicate; after it, it would count again. Requests not yet consumed are never deleted.

On PostgreSQL the time-partitioned tables (`monitor.storage.PARTITIONED`) lose whole partitions:
one whose range ended before the cutoff and that holds no row written since is dropped, and row
deletes there are bounded by the partition key too (`key < cutoff`), so they touch only the
partitions before the cutoff. The same job then creates the partitions of the coming periods
and moves rows that landed in a table's DEFAULT partition into partitions of their own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, or_
from sqlalchemy.engine import Engine
from sqlalchemy.sql.dml import Delete

from monitor.failures import Isolation
from monitor.storage import (
    PARTITIONED,
    AlertNotification,
    CanaryRun,
    DayCount,
    DayOutcomeSummary,
    DayProfile,
    DeadLetter,
    DriftPeriodResultRow,
    DriftResultRow,
    EstimatedResultRow,
    FairnessResultRow,
    IntakeEntry,
    JobFailure,
    JobRun,
    LabeledPrediction,
    OutcomePeriodResultRow,
    OutcomeResultRow,
    OutcomeSummaryRow,
    PartitionSpec,
    SegmentRun,
    ShadowWindow,
    SkewRun,
    SloResultRow,
    SourcePosition,
    WindowChange,
    WindowCount,
    WindowProfile,
    WindowServing,
    create_partition,
    drop_expired,
    missing_periods,
    transaction,
)

HTTP_KEY_PREFIXES = ("idem:", "labels:", "replica:")


def purge(
    engine: Engine,
    cutoff: datetime,
    labeled_cutoff: datetime | None = None,
    isolation: Isolation | None = None,
    intake_cutoff: datetime | None = None,
) -> dict[str, int]:
    """Delete what is older than `cutoff` (raw joined pairs: `labeled_cutoff` if later;
    HTTP intake requests consumed before `intake_cutoff`, default `cutoff`); returns rows
    deleted per table purged."""
    joined = cutoff if labeled_cutoff is None else max(cutoff, labeled_cutoff)
    statements = {
        "window_profiles": delete(WindowProfile).where(WindowProfile.updated_at < cutoff),
        "window_counts": delete(WindowCount).where(WindowCount.updated_at < cutoff),
        "window_serving": delete(WindowServing).where(WindowServing.updated_at < cutoff),
        "shadow_windows": delete(ShadowWindow).where(ShadowWindow.updated_at < cutoff),
        "drift_results": delete(DriftResultRow).where(DriftResultRow.computed_at < cutoff),
        "outcome_results": delete(OutcomeResultRow).where(OutcomeResultRow.computed_at < cutoff),
        "drift_period_results": delete(DriftPeriodResultRow).where(
            DriftPeriodResultRow.computed_at < cutoff
        ),
        "outcome_period_results": delete(OutcomePeriodResultRow).where(
            OutcomePeriodResultRow.computed_at < cutoff
        ),
        "slo_results": delete(SloResultRow).where(SloResultRow.computed_at < cutoff),
        "estimated_results": delete(EstimatedResultRow).where(
            EstimatedResultRow.computed_at < cutoff
        ),
        "fairness_results": delete(FairnessResultRow).where(FairnessResultRow.computed_at < cutoff),
        "labeled_predictions": delete(LabeledPrediction).where(
            LabeledPrediction.joined_at < joined
        ),
        "outcome_summaries": delete(OutcomeSummaryRow).where(OutcomeSummaryRow.updated_at < cutoff),
        "day_profiles": delete(DayProfile).where(DayProfile.updated_at < cutoff),
        "day_counts": delete(DayCount).where(DayCount.updated_at < cutoff),
        "day_outcome_summaries": delete(DayOutcomeSummary).where(
            DayOutcomeSummary.updated_at < cutoff
        ),
        "window_changes": delete(WindowChange).where(WindowChange.changed_at < cutoff),
        "canary_runs": delete(CanaryRun).where(CanaryRun.evaluated_at < cutoff),
        "skew_runs": delete(SkewRun).where(SkewRun.evaluated_at < cutoff),
        "segment_runs": delete(SegmentRun).where(SegmentRun.evaluated_at < cutoff),
        "dead_letters": delete(DeadLetter).where(DeadLetter.created_at < cutoff),
        "alert_notifications": delete(AlertNotification).where(
            AlertNotification.created_at < cutoff,
            AlertNotification.status.in_(("sent", "dead")),
        ),
        "job_runs": delete(JobRun).where(JobRun.claimed_at < cutoff, JobRun.status != "running"),
        "source_positions": delete(SourcePosition).where(
            SourcePosition.updated_at < cutoff,
            or_(*(SourcePosition.key.startswith(p) for p in HTTP_KEY_PREFIXES)),
        ),
    }
    statements["job_failures"] = delete(JobFailure).where(JobFailure.last_failed_at < cutoff)
    consumed_before = cutoff if intake_cutoff is None else intake_cutoff
    statements["intake_log"] = delete(IntakeEntry).where(IntakeEntry.consumed_at < consumed_before)
    cutoffs = {t: joined if t == "labeled_predictions" else cutoff for t in PARTITIONED}
    _bound_by_partition_key(statements, cutoffs)
    # One transaction per table: a table that cannot be purged now (locked, say) is recorded
    # and retried, and never keeps the others from being purged.
    isolation = isolation or Isolation(engine, "retention")
    isolation.begin()
    deleted: dict[str, int] = {}
    for table, stmt in statements.items():
        dropped = 0
        if table in PARTITIONED:
            drop = functools.partial(_drop_partitions, engine, table, cutoffs[table])
            dropped = isolation.attempt(f"drop partitions {table}", drop) or 0
        count = isolation.attempt(f"purge {table}", functools.partial(_delete, engine, stmt))
        if count is not None:
            deleted[table] = dropped + count
    return deleted


def _bound_by_partition_key(statements: dict[str, Delete], cutoffs: dict[str, datetime]) -> None:
    """Deletes from time-partitioned tables also need their key before the cutoff, so that
    PostgreSQL prunes them to the partitions before it (a row whose event time is after the
    cutoff was written at or after it, clocks ahead aside, and waits until the cutoff passes)."""
    for table, spec in PARTITIONED.items():
        stmt = statements[table]
        statements[table] = stmt.where(stmt.table.c[spec.key] < cutoffs[table])


def _drop_partitions(engine: Engine, table: str, cutoff: datetime) -> int:
    with engine.begin() as conn:
        return drop_expired(conn, PARTITIONED[table], cutoff)


def maintain_partitions(
    engine: Engine, now: datetime, isolation: Isolation | None = None
) -> dict[str, int]:
    """Create the coming partitions of each time-partitioned table (and those of rows waiting
    in its DEFAULT partition); returns partitions created per table (none on SQLite)."""
    if isolation is None:
        isolation = Isolation(engine, "retention")
        isolation.begin()
    created: dict[str, int] = {}
    for table, spec in PARTITIONED.items():
        count = isolation.attempt(
            f"create partitions {table}", functools.partial(_maintain, engine, spec, now)
        )
        if count:
            created[table] = count
    return created


def _maintain(engine: Engine, spec: PartitionSpec, now: datetime) -> int:
    with engine.connect() as conn:
        starts = missing_periods(conn, spec, now)
    created = 0
    for start in starts:  # one transaction each: the DEFAULT partition is locked only briefly
        with engine.begin() as conn:
            created += create_partition(conn, spec, start)
    return created


def _delete(engine: Engine, stmt: Any) -> int:
    with transaction(engine) as s:
        return int(getattr(s.execute(stmt), "rowcount", 0) or 0)


def retention_job(
    engine: Engine,
    days: int,
    labeled_days: int | None = None,
    on_failure: Callable[[str], None] | None = None,
    dedup_window: timedelta | None = None,
) -> Callable[[datetime], None]:
    """The scheduled job: purge what fell out of the retention period(s) and, for consumed
    HTTP intake requests, out of the dedup window."""
    isolation = Isolation(engine, "retention", on_failure=on_failure)

    def run(window: datetime) -> None:
        joined = None if labeled_days is None else window - timedelta(days=labeled_days)
        intake = None if dedup_window is None else window - dedup_window
        purge(engine, window - timedelta(days=days), joined, isolation, intake)
        maintain_partitions(engine, window, isolation)

    return run
