"""Slack incoming webhook: one message per notification, one line per alert."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from alerts.base import Notification, OutboundRequest, json_bytes
from alerts.receivers.registry import register
from monitor.config.alerts import ReceiverConfig

_COLORS = {"firing": "#d62728", "resolved": "#2ca02c"}


def slack_message(notification: Notification) -> dict[str, Any]:
    """Slack's `text` + attachment document for a notification."""
    firing = [a for a in notification.alerts if a.status == "firing"]
    title_labels = " ".join(f"{k}={v}" for k, v in sorted(notification.group_labels.items()))
    status = notification.status.upper()
    count = f":{len(firing)}" if firing else ""
    lines = []
    for a in notification.alerts:
        text = a.annotations.get("summary") or a.labels.get("alertname", "")
        runbook = a.annotations.get("runbook_url")
        lines.append(f"*{a.status}* {text}" + (f" (<{runbook}|runbook>)" if runbook else ""))
    return {
        "text": f"[{status}{count}] {title_labels}",
        "attachments": [{"color": _COLORS[notification.status], "text": "\n".join(lines)}],
    }


@dataclass(frozen=True)
class SlackReceiver:
    """POSTs to a Slack incoming-webhook URL."""

    name: str
    url: str

    def render(self, notification: Notification) -> list[OutboundRequest]:
        return [OutboundRequest(self.url, json_bytes(slack_message(notification)))]


@register("slack")
def _build(config: ReceiverConfig, env: Mapping[str, str]) -> SlackReceiver:
    return SlackReceiver(config.name, config.url)
