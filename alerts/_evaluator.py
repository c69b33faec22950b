"""One evaluation: signals -> alert states -> muting -> group notifications, in one transaction.

Every notification and rollback request is an outbox row written in the same transaction as
the state change that caused it: either both are stored or neither is.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from alerts._inhibit import inhibited
from alerts._notify import flush_groups
from alerts._outbox import enqueue
from alerts._rules import Candidate, evaluate_rules
from alerts._state import StoredState, step
from alerts.base import Signal
from alerts.silences import list_silences
from monitor.config.alerts import AlertsConfig, RuleConfig
from monitor.errors import InputError
from monitor.storage import AlertState, transaction


@dataclass(frozen=True)
class Transition:
    """One fingerprint's state change (None: no row)."""

    fingerprint: str
    rule: str
    before: str | None
    after: str | None


@dataclass(frozen=True)
class EvaluationResult:
    """What one evaluation changed and queued."""

    transitions: tuple[Transition, ...]
    notifications: int
    rollbacks: int
    states: dict[str, str] = field(default_factory=dict)


class Evaluator:
    """Applies the configured rules to batches of signals; `now` is always passed in."""

    def __init__(self, engine: Engine, config: AlertsConfig) -> None:
        self.engine = engine
        self.config = config
        self.rules = {r.name: r for r in config.rules}

    def evaluate(
        self, signals: Iterable[Signal], now: datetime, kinds: Collection[str] | None = None
    ) -> EvaluationResult:
        """Evaluate at `now`. An alert whose signal is absent from the batch is inactive;
        pass `kinds` to evaluate only rules over those signal kinds (the others keep state)."""
        if now.tzinfo is None:
            raise InputError(f"evaluation time {now.isoformat()} is naive; use UTC")
        candidates = evaluate_rules(self.config.rules, signals)
        with transaction(self.engine) as session:
            rows = {r.fingerprint: r for r in session.scalars(select(AlertState))}
            transitions, fired = self._advance(session, rows, candidates, now, kinds)
            self._mute(session, rows, now)
            rollbacks = self._rollbacks(session, rows, fired, now)
            sent = flush_groups(session, self.config, rows, now)
            states = {fp: r.state for fp, r in rows.items()}
        return EvaluationResult(tuple(transitions), sent, rollbacks, states)

    def _advance(
        self,
        session: Session,
        rows: dict[str, AlertState],
        candidates: dict[str, Candidate],
        now: datetime,
        kinds: Collection[str] | None,
    ) -> tuple[list[Transition], list[str]]:
        transitions: list[Transition] = []
        fired: list[str] = []
        for fp in sorted(set(candidates) | set(rows)):
            cand, row = candidates.get(fp), rows.get(fp)
            rule = cand.rule if cand else self.rules.get(row.rule) if row else None
            if cand is None and rule is not None and kinds is not None and rule.kind not in kinds:
                continue
            name = cand.rule.name if cand else row.rule if row else ""
            before = row.state if row else None
            after = self._apply(session, rows, fp, cand, rule, now)
            if after != before:
                transitions.append(Transition(fp, name, before, after))
            if after == "firing" and before != "firing":
                fired.append(fp)
        return transitions, fired

    def _apply(
        self,
        session: Session,
        rows: dict[str, AlertState],
        fp: str,
        cand: Candidate | None,
        rule: RuleConfig | None,
        now: datetime,
    ) -> str | None:
        row = rows.get(fp)
        prev = StoredState(row.state, row.active_since, row.last_active_at) if row else None  # type: ignore[arg-type]
        for_ = rule.for_ if rule else timedelta(0)
        keep = rule.keep_firing_for if rule else timedelta(0)
        result = step(prev, cand is not None and cand.active, now, for_, keep)
        if result.state is None:
            if row is not None:
                session.delete(row)
                del rows[fp]
            return None
        if row is None:
            assert cand is not None
            row = AlertState(fingerprint=fp, rule=cand.rule.name)
            session.add(row)
            rows[fp] = row
        changed = prev is None or prev.state != result.state
        if cand is not None:
            changed = changed or (row.labels, row.annotations) != (cand.labels, cand.annotations)
            row.labels, row.annotations, row.value = cand.labels, cand.annotations, cand.value
        row.state = result.state
        row.active_since = result.active_since or now
        row.last_active_at = result.last_active_at or now
        if result.became_firing:
            row.fired_at, row.resolved_at = now, None
        if result.became_resolved:
            row.resolved_at = now
        if changed:  # the API lists alerts newest change first: a re-evaluation is no change
            row.updated_at = now
        return result.state

    def _mute(self, session: Session, rows: dict[str, AlertState], now: datetime) -> None:
        silences = [s for s in list_silences(session, now) if s.active(now)]
        firing = {fp: r.labels for fp, r in rows.items() if r.state == "firing"}
        muted = inhibited(firing, self.config.inhibit_rules)
        for fp, row in rows.items():
            reason = None
            if row.state != "resolved":
                hit = next((s for s in silences if s.matches(row.labels)), None)
                reason = f"silence:{hit.id}" if hit else "inhibited" if fp in muted else None
            if row.muted_by != reason:
                row.muted_by = reason

    def _rollbacks(
        self, session: Session, rows: dict[str, AlertState], fired: list[str], now: datetime
    ) -> int:
        count = 0
        for fp in fired:
            row = rows[fp]
            rule = self.rules.get(row.rule)
            if rule is None or rule.action != "rollback" or row.muted_by is not None:
                continue
            payload = {
                "fingerprint": fp,
                "rule": row.rule,
                "model": row.labels.get("model", ""),
                "version": row.labels.get("version", ""),
                "labels": row.labels,
                "annotations": row.annotations,
                "value": row.value,
                "fired_at": now.isoformat(),
            }
            enqueue(
                session,
                kind="rollback",
                receiver="rollback",
                group_key=fp,
                seq=0,
                payload=payload,
                now=now,
            )
            count += 1
        return count
