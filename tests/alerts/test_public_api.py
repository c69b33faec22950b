"""The alerts package's public surface is pinned."""

from __future__ import annotations

import alerts
import alerts.receivers

PINNED = {
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
}


def test_alerts_all_is_pinned() -> None:
    assert set(alerts.__all__) == PINNED
    assert all(hasattr(alerts, name) for name in alerts.__all__)


def test_receivers_all_is_pinned() -> None:
    assert set(alerts.receivers.__all__) == {
        "alertmanager",
        "build_receiver",
        "pagerduty",
        "receiver_types",
        "register",
        "slack",
        "webhook",
    }


def test_config_checks_signal_kinds_against_the_alerts_registry() -> None:
    from monitor.app.daemon.names import registry_names

    assert tuple(registry_names().signal_kinds) == alerts.SIGNAL_KINDS
