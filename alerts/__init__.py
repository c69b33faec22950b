"""Alert rules, state, grouping, silences and durable signed webhook delivery."""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.common.lazy import lazy_surface

if TYPE_CHECKING:
    from alerts._deadline import deadline_client
    from alerts._evaluator import EvaluationResult, Evaluator, Transition
    from alerts._outbox import status_counts
    from alerts._signing import IDEMPOTENCY_HEADER, SIGNATURE_HEADER, sign, verify_signature
    from alerts.base import (
        SIGNAL_KINDS,
        AlertSnapshot,
        Notification,
        OutboundRequest,
        Receiver,
        Signal,
        SignalKind,
        fingerprint,
    )
    from alerts.delivery import DeliveryReport, DeliveryWorker, RollbackHandler
    from alerts.silences import Silence, add_silence, expire_silence, list_silences

__all__ = [
    "IDEMPOTENCY_HEADER",
    "SIGNAL_KINDS",
    "SIGNATURE_HEADER",
    "AlertSnapshot",
    "DeliveryReport",
    "DeliveryWorker",
    "EvaluationResult",
    "Evaluator",
    "Notification",
    "OutboundRequest",
    "Receiver",
    "RollbackHandler",
    "Signal",
    "SignalKind",
    "Silence",
    "Transition",
    "add_silence",
    "deadline_client",
    "expire_silence",
    "fingerprint",
    "list_silences",
    "sign",
    "status_counts",
    "verify_signature",
]

# Each name loads with its module when first read: reading SIGNAL_KINDS or the receivers'
# names (config validation) does not load delivery's httpx or the silences' SQLAlchemy.
__getattr__ = lazy_surface(
    __name__,
    {
        "alerts._deadline": ("deadline_client",),
        "alerts._evaluator": (
            "EvaluationResult",
            "Evaluator",
            "Transition",
        ),
        "alerts._outbox": ("status_counts",),
        "alerts._signing": (
            "IDEMPOTENCY_HEADER",
            "SIGNATURE_HEADER",
            "sign",
            "verify_signature",
        ),
        "alerts.base": (
            "SIGNAL_KINDS",
            "AlertSnapshot",
            "Notification",
            "OutboundRequest",
            "Receiver",
            "Signal",
            "SignalKind",
            "fingerprint",
        ),
        "alerts.delivery": (
            "DeliveryReport",
            "DeliveryWorker",
            "RollbackHandler",
        ),
        "alerts.silences": (
            "Silence",
            "add_silence",
            "expire_silence",
            "list_silences",
        ),
    },
)
