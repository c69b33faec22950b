"""Group alerts per (receiver, rule, group labels) and queue the notifications that are due."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from alerts._grouping import GroupTimes, flush_due, group_key, group_labels
from alerts._outbox import enqueue
from alerts.base import AlertSnapshot, Notification
from monitor.config.alerts import AlertsConfig, GroupingConfig
from monitor.storage import AlertGroup, AlertState


@dataclass
class _Draft:
    receiver: str
    rule: str
    labels: dict[str, str]
    firing: set[str] = field(default_factory=set)


def _current_groups(config: AlertsConfig, rows: dict[str, AlertState]) -> dict[str, _Draft]:
    rules = {r.name: r for r in config.rules}
    drafts: dict[str, _Draft] = {}
    for fp, row in rows.items():
        rule = rules.get(row.rule)
        if rule is None:
            continue
        grouping = rule.grouping or config.grouping
        glabels = group_labels(row.labels, grouping.group_by)
        for receiver in rule.receivers:
            key = group_key(receiver, rule.name, glabels)
            draft = drafts.setdefault(key, _Draft(receiver, rule.name, glabels))
            if row.state == "firing" and row.muted_by is None:
                draft.firing.add(fp)
    return drafts


def _snapshot(row: AlertState, status: str) -> AlertSnapshot:
    return AlertSnapshot(
        fingerprint=row.fingerprint,
        status="firing" if status == "firing" else "resolved",
        labels=dict(row.labels),
        annotations=dict(row.annotations),
        starts_at=row.fired_at or row.active_since,
        ends_at=row.resolved_at if status == "resolved" else None,
        value=row.value,
    )


def _waiting_since(
    since: datetime | None, has_new: bool, now: datetime, grouping: GroupingConfig
) -> datetime | None:
    """When the group started waiting. Kept for a group interval after a new alert vanishes
    unsent, so that an alert flapping faster than group_wait is still reported."""
    if has_new:
        return since or now
    if since is not None and now - since < grouping.group_interval:
        return since
    return None


def flush_groups(
    session: Session, config: AlertsConfig, rows: dict[str, AlertState], now: datetime
) -> int:
    """Queue one outbox row per group whose timers say so; returns how many were queued."""
    rules = {r.name: r for r in config.rules}
    receivers = {r.name for r in config.receivers}
    drafts = _current_groups(config, rows)
    stored = {g.group_key: g for g in session.scalars(select(AlertGroup))}
    queued = 0
    for key in sorted(set(drafts) | {k for k, g in stored.items() if g.notified}):
        draft = drafts.get(key)
        group = stored.get(key)
        if group is None:
            assert draft is not None
            group = AlertGroup(
                group_key=key,
                receiver=draft.receiver,
                rule=draft.rule,
                group_labels=draft.labels,
                notified=[],
                seq=0,
            )
            session.add(group)
        firing = draft.firing if draft else set()
        rule = rules.get(group.rule)
        grouping = (rule.grouping if rule else None) or config.grouping
        if group.receiver not in receivers:
            group.notified = []
            continue
        if _flush_one(session, config, group, firing, rows, now, grouping):
            queued += 1
    return queued


def _flush_one(
    session: Session,
    config: AlertsConfig,
    group: AlertGroup,
    firing: set[str],
    rows: dict[str, AlertState],
    now: datetime,
    grouping: GroupingConfig,
) -> bool:
    notified = set(group.notified)
    resolved = {fp for fp in notified - firing if fp in rows and rows[fp].state == "resolved"}
    # Notified alerts now muted (or gone) drop out quietly; they are new again when unmuted.
    notified = (notified & firing) | resolved
    new = firing - notified
    waiting = _waiting_since(group.waiting_since, bool(new), now, grouping)
    times = GroupTimes(waiting_since=waiting, last_flush_at=group.last_flush_at)
    if not flush_due(
        firing=firing,
        notified=notified,
        resolved=resolved,
        times=times,
        now=now,
        grouping=grouping,
    ):
        group.waiting_since = waiting
        group.notified = sorted(notified - resolved)
        return False
    alerts = [_snapshot(rows[fp], "firing") for fp in firing]
    alerts += [_snapshot(rows[fp], "resolved") for fp in resolved]
    alerts.sort(key=lambda a: (a.status != "firing", sorted(a.labels.items())))
    group.seq += 1
    note = Notification(
        receiver=group.receiver,
        group_key=group.group_key,
        group_labels=dict(group.group_labels),
        alerts=tuple(alerts),
        external_url=config.external_url,
        created_at=now,
    )
    enqueue(
        session,
        kind="notify",
        receiver=group.receiver,
        group_key=group.group_key,
        seq=group.seq,
        payload=note.to_json(),
        now=now,
    )
    group.notified = sorted(firing)
    group.last_flush_at = now
    group.waiting_since = None
    return True
