"""Storage: typed ORM models and engines (migrations and the schema check live in `migrations`).

Every table's model is imported here so that `Base.metadata` is complete for Alembic.
"""

from __future__ import annotations

from monitor.storage._alerts import AlertGroup, AlertNotification, AlertSilence, AlertState
from monitor.storage._changes import (
    CHANGE_KINDS,
    Change,
    WindowChange,
    consume_changes,
    mark_changed,
    mark_read,
    models_pending,
    pending_changes,
    pending_kinds,
)
from monitor.storage._collectors import (
    DeadLetter,
    IngestCounter,
    LabeledPrediction,
    PendingHalf,
    SourcePosition,
    WaitingBatch,
    WaitingHead,
    WindowCount,
    WindowProfile,
    WindowServing,
)
from monitor.storage._core import (
    ALIASES,
    Baseline,
    BaselineProfile,
    Model,
    ModelAlias,
    ModelVersion,
)
from monitor.storage._daemon import JobFailure, JobRun
from monitor.storage._days import DayCount, DayOutcomeSummary, DayProfile
from monitor.storage._engine import (
    fetch_rows,
    make_engine,
    normalize_url,
    session_factory,
    transaction,
)
from monitor.storage._estimates import EstimatedResultRow
from monitor.storage._fairness import FairnessResultRow
from monitor.storage._guards import GateRun, RollbackEvent
from monitor.storage._intake import IntakeEntry, intake_settled, oldest_pending
from monitor.storage._partitions import (
    PARTITIONED,
    RECENT,
    PartitionSpec,
    create_partition,
    drop_expired,
    ensure_partition,
    include_name,
    is_partitioned,
    missing_periods,
    newest,
    newest_query,
    next_start,
    period_start,
)
from monitor.storage._results import (
    DriftPeriodResultRow,
    DriftResultRow,
    OutcomePeriodResultRow,
    OutcomeResultRow,
    SloResultRow,
)
from monitor.storage._shadow import ShadowPending, ShadowWindow
from monitor.storage._summaries import OutcomeSummaryRow
from monitor.storage._watch import CanaryRun, SegmentRun, SkewRun
from monitor.storage.base import NAMING_CONVENTION, Base, UTCDateTime, utcnow

__all__ = [
    "CanaryRun",
    "SegmentRun",
    "SkewRun",
    "ALIASES",
    "CHANGE_KINDS",
    "Change",
    "EstimatedResultRow",
    "FairnessResultRow",
    "OutcomeSummaryRow",
    "ShadowPending",
    "ShadowWindow",
    "WindowChange",
    "consume_changes",
    "fetch_rows",
    "mark_changed",
    "models_pending",
    "mark_read",
    "pending_changes",
    "pending_kinds",
    "NAMING_CONVENTION",
    "PARTITIONED",
    "PartitionSpec",
    "create_partition",
    "drop_expired",
    "RECENT",
    "newest",
    "newest_query",
    "ensure_partition",
    "include_name",
    "is_partitioned",
    "missing_periods",
    "next_start",
    "period_start",
    "AlertGroup",
    "AlertNotification",
    "AlertSilence",
    "AlertState",
    "Base",
    "Baseline",
    "BaselineProfile",
    "DayCount",
    "DayOutcomeSummary",
    "DayProfile",
    "DeadLetter",
    "DriftPeriodResultRow",
    "DriftResultRow",
    "GateRun",
    "IngestCounter",
    "IntakeEntry",
    "intake_settled",
    "oldest_pending",
    "JobFailure",
    "JobRun",
    "LabeledPrediction",
    "Model",
    "ModelAlias",
    "ModelVersion",
    "OutcomePeriodResultRow",
    "OutcomeResultRow",
    "PendingHalf",
    "RollbackEvent",
    "SloResultRow",
    "SourcePosition",
    "WaitingBatch",
    "WaitingHead",
    "UTCDateTime",
    "WindowCount",
    "WindowProfile",
    "WindowServing",
    "make_engine",
    "normalize_url",
    "session_factory",
    "transaction",
    "utcnow",
]
