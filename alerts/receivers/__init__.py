"""Receivers: generic webhook (Alertmanager v4), Slack, PagerDuty Events v2, Alertmanager API."""

from __future__ import annotations

from alerts.receivers import alertmanager, pagerduty, slack, webhook
from alerts.receivers.registry import build_receiver, receiver_types, register

__all__ = [
    "alertmanager",
    "build_receiver",
    "pagerduty",
    "receiver_types",
    "register",
    "slack",
    "webhook",
]
