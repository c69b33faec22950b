"""Push alerts to a real Alertmanager's `POST /api/v2/alerts`.

Firing alerts carry `endsAt` = notification time + `ends_at_horizon` (Alertmanager resolves an
alert that is not re-pushed by then); keep the rule's `repeat_interval` below that horizon.
Resolved alerts carry their resolution time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from alerts.annotations import generator_url
from alerts.base import Notification, OutboundRequest, json_bytes, rfc3339
from alerts.receivers.registry import register
from monitor.config.alerts import ReceiverConfig

API_PATH = "/api/v2/alerts"


def postable_alerts(notification: Notification, horizon: timedelta) -> list[dict[str, Any]]:
    """Alertmanager API v2 `postableAlerts` for a notification."""
    base = notification.external_url.rstrip("/")
    out = []
    for a in notification.alerts:
        ends = a.ends_at if a.status == "resolved" else notification.created_at + horizon
        out.append(
            {
                "labels": a.labels,
                "annotations": a.annotations,
                "startsAt": rfc3339(a.starts_at),
                "endsAt": rfc3339(ends),
                "generatorURL": generator_url(base, a.fingerprint),
            }
        )
    return out


@dataclass(frozen=True)
class AlertmanagerReceiver:
    """POSTs alerts to an Alertmanager (the URL may be its base or the full API path)."""

    name: str
    url: str
    horizon: timedelta

    def render(self, notification: Notification) -> list[OutboundRequest]:
        body = json_bytes(postable_alerts(notification, self.horizon))
        return [OutboundRequest(self.url, body)]


@register("alertmanager")
def _build(config: ReceiverConfig, env: Mapping[str, str]) -> AlertmanagerReceiver:
    url = config.url.rstrip("/")
    if not url.endswith(API_PATH):
        url += API_PATH
    return AlertmanagerReceiver(config.name, url, config.ends_at_horizon)
