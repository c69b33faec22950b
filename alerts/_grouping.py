"""Grouping timers: when a notification group has something to send.

Alertmanager's timers, with one change: a resolution is sent at the next evaluation instead of
waiting for the group interval.

- New firing alerts in a group never notified wait `group_wait` (to batch what fires together).
- New firing alerts in a group notified before wait until `group_interval` after the last
  notification (and at least `group_wait` after they appeared).
- An alert that was notified as firing and has resolved is sent at once.
- Nothing new: the firing set is re-sent every `repeat_interval`.

A flapping alert therefore costs at most one firing and one resolved notification per group
interval; `keep_firing_for` on the rule damps it further.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from monitor.config.alerts import GroupingConfig


def group_labels(labels: Mapping[str, str], group_by: list[str]) -> dict[str, str]:
    """The values of the `group_by` labels (a missing label reads as "")."""
    return {name: labels.get(name, "") for name in group_by}


def group_key(receiver: str, rule: str, labels: Mapping[str, str]) -> str:
    """A stable 32-hex-digit key per (receiver, rule, group label values)."""
    canonical = json.dumps([receiver, rule, sorted(labels.items())], separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class GroupTimes:
    """A group's timer state before this evaluation."""

    waiting_since: datetime | None
    last_flush_at: datetime | None


def flush_due(
    *,
    firing: set[str],
    notified: set[str],
    resolved: set[str],
    times: GroupTimes,
    now: datetime,
    grouping: GroupingConfig,
) -> bool:
    """Whether the group sends a notification at `now`."""
    if resolved:
        return True
    new = firing - notified
    if new:
        since = times.waiting_since or now
        due = since + grouping.group_wait
        if times.last_flush_at is not None:
            due = max(due, times.last_flush_at + grouping.group_interval)
        return now >= due
    if firing and times.last_flush_at is not None:
        return now >= times.last_flush_at + grouping.repeat_interval
    return False
