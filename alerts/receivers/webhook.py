"""Generic webhook: Alertmanager's webhook payload, version 4, as its receivers expect it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from alerts.annotations import generator_url
from alerts.base import Notification, OutboundRequest, common_items, json_bytes, rfc3339
from alerts.receivers.registry import register
from monitor.config.alerts import ReceiverConfig


def alertmanager_v4(notification: Notification) -> dict[str, Any]:
    """The Alertmanager v4 webhook document for a notification."""
    base = notification.external_url.rstrip("/")
    labels = [a.labels for a in notification.alerts]
    group = ",".join(f'{k}="{v}"' for k, v in sorted(notification.group_labels.items()))
    return {
        "version": "4",
        "groupKey": f"{{}}:{{{group}}}",
        "truncatedAlerts": 0,
        "status": notification.status,
        "receiver": notification.receiver,
        "groupLabels": notification.group_labels,
        "commonLabels": common_items(labels),
        "commonAnnotations": common_items([a.annotations for a in notification.alerts]),
        "externalURL": base,
        "alerts": [
            {
                "status": a.status,
                "labels": a.labels,
                "annotations": a.annotations,
                "startsAt": rfc3339(a.starts_at),
                "endsAt": rfc3339(a.ends_at),
                "generatorURL": generator_url(base, a.fingerprint),
                "fingerprint": a.fingerprint,
            }
            for a in notification.alerts
        ],
    }


@dataclass(frozen=True)
class WebhookReceiver:
    """POSTs the Alertmanager v4 JSON document to a URL."""

    name: str
    url: str

    def render(self, notification: Notification) -> list[OutboundRequest]:
        return [OutboundRequest(self.url, json_bytes(alertmanager_v4(notification)))]


@register("webhook")
def _build(config: ReceiverConfig, env: Mapping[str, str]) -> WebhookReceiver:
    return WebhookReceiver(config.name, config.url)
