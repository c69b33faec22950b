"""PagerDuty Events API v2: one trigger or resolve event per alert, deduplicated by fingerprint.

The URL is configurable (PagerDuty's is https://events.pagerduty.com/v2/enqueue); the routing
key is read from the environment variable named by `routing_key_env`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from alerts.base import AlertSnapshot, Notification, OutboundRequest, json_bytes, rfc3339
from alerts.receivers.registry import read_env, register
from monitor.config.alerts import ReceiverConfig
from monitor.errors import ConfigError

_SEVERITY = {"critical": "critical", "warning": "warning", "info": "info"}


def pagerduty_event(alert: AlertSnapshot, routing_key: str, source: str) -> dict[str, Any]:
    """The Events API v2 document for one alert."""
    event: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger" if alert.status == "firing" else "resolve",
        "dedup_key": alert.fingerprint,
    }
    if alert.status == "firing":
        summary = alert.annotations.get("summary") or alert.labels.get("alertname", "alert")
        event["payload"] = {
            "summary": summary[:1024],
            "source": alert.labels.get("model") or source,
            "severity": _SEVERITY.get(alert.labels.get("severity", ""), "error"),
            "timestamp": rfc3339(alert.starts_at),
            "custom_details": {
                "labels": alert.labels,
                "annotations": alert.annotations,
                "value": alert.value,
            },
        }
        runbook = alert.annotations.get("runbook_url")
        if runbook:
            event["links"] = [{"href": runbook, "text": "runbook"}]
    return event


@dataclass(frozen=True)
class PagerDutyReceiver:
    """Sends Events API v2 events; the routing key never shows in its repr."""

    name: str
    url: str
    routing_key: str = field(repr=False)

    def render(self, notification: Notification) -> list[OutboundRequest]:
        return [
            OutboundRequest(
                self.url, json_bytes(pagerduty_event(a, self.routing_key, notification.receiver))
            )
            for a in notification.alerts
        ]


@register("pagerduty")
def _build(config: ReceiverConfig, env: Mapping[str, str]) -> PagerDutyReceiver:
    if config.routing_key_env is None:
        raise ConfigError(f"alerts.receivers '{config.name}': pagerduty needs routing_key_env")
    key = read_env(env, config.routing_key_env, config.name, "routing_key_env")
    return PagerDutyReceiver(config.name, config.url, key)
