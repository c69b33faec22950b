"""Storage: typed ORM models and engines (migrations and the schema check live in `migrations`).

Every table's model is imported here so that `Base.metadata` is complete for Alembic.
"""

from __future__ import annotations

from monitor.storage.alerts import AlertGroup, AlertNotification, AlertSilence, AlertState
from monitor.storage.base import NAMING_CONVENTION, Base, UTCDateTime, utcnow
from monitor.storage.changes import (
    CHANGE_KINDS,
    Change,
    WindowChange,
    consume_changes,
    mark_changed,
    pending_changes,
)
from monitor.storage.collectors import (
    DeadLetter,
    IngestCounter,
    LabeledPrediction,
    PendingHalf,
    PendingLabel,
    PendingPrediction,
    SourcePosition,
    WindowCount,
    WindowProfile,
    WindowServing,
)
from monitor.storage.core import (
    ALIASES,
    Baseline,
    BaselineProfile,
    Model,
    ModelAlias,
    ModelVersion,
)
from monitor.storage.daemon import JobFailure, JobRun
from monitor.storage.engine import make_engine, normalize_url, session_factory, transaction
from monitor.storage.estimates import EstimatedResultRow
from monitor.storage.guards import GateRun, RollbackEvent
from monitor.storage.intake import IntakeEntry
from monitor.storage.results import (
    DriftPeriodResultRow,
    DriftResultRow,
    OutcomePeriodResultRow,
    OutcomeResultRow,
    SloResultRow,
)
from monitor.storage.summaries import OutcomeSummaryRow

__all__ = [
    "ALIASES",
    "CHANGE_KINDS",
    "Change",
    "EstimatedResultRow",
    "OutcomeSummaryRow",
    "WindowChange",
    "consume_changes",
    "mark_changed",
    "pending_changes",
    "NAMING_CONVENTION",
    "AlertGroup",
    "AlertNotification",
    "AlertSilence",
    "AlertState",
    "Base",
    "Baseline",
    "BaselineProfile",
    "DeadLetter",
    "DriftPeriodResultRow",
    "DriftResultRow",
    "GateRun",
    "IngestCounter",
    "IntakeEntry",
    "JobFailure",
    "JobRun",
    "LabeledPrediction",
    "Model",
    "ModelAlias",
    "ModelVersion",
    "OutcomePeriodResultRow",
    "OutcomeResultRow",
    "PendingHalf",
    "PendingLabel",
    "PendingPrediction",
    "RollbackEvent",
    "SloResultRow",
    "SourcePosition",
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
