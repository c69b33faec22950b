"""Evaluation end to end on SQLite and PostgreSQL: states, grouping timers, outbox rows."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from alerts._evaluator import Evaluator
from alerts.base import Notification
from monitor.storage import AlertNotification, AlertState, transaction
from tests.alerts.conftest import alerts_config, at, drift


def outbox(engine: Engine, kind: str = "notify") -> list[Notification]:
    with transaction(engine) as s:
        rows = s.scalars(
            select(AlertNotification)
            .where(AlertNotification.kind == kind)
            .order_by(AlertNotification.id)
        ).all()
        return [Notification.from_json(r.payload) for r in rows]


def states(engine: Engine) -> dict[str, str]:
    with transaction(engine) as s:
        return {r.labels["column"]: r.state for r in s.scalars(select(AlertState))}


def test_firing_waits_group_wait_and_resolution_is_prompt(
    engine: Engine, make_evaluator: Any
) -> None:
    ev: Evaluator = make_evaluator()
    ev.evaluate([drift()], at(0))
    assert states(engine) == {"amount": "firing"}
    assert outbox(engine) == []
    ev.evaluate([drift()], at(29))
    assert outbox(engine) == []
    ev.evaluate([drift()], at(30))
    [first] = outbox(engine)
    assert first.status == "firing"
    [alert] = first.alerts
    assert alert.labels["alertname"] == "FeatureDrift" and alert.labels["column"] == "amount"
    assert alert.annotations["summary"] == "fraud column amount drifted: 0.30 > 0.2"
    assert alert.annotations["runbook_url"] == "https://runbooks.example/drift#amount"
    ev.evaluate([drift(firing=False)], at(40))
    notes = outbox(engine)
    assert [n.status for n in notes] == ["firing", "resolved"]
    assert notes[1].alerts[0].ends_at == at(40)
    assert states(engine) == {"amount": "resolved"}


def test_pending_for_duration_then_firing(engine: Engine) -> None:
    rule = alerts_config().rules[0].model_dump(by_alias=True)
    ev = Evaluator(engine, alerts_config(rules=[{**rule, "for": "2m"}]))
    ev.evaluate([drift()], at(0))
    ev.evaluate([drift()], at(60))
    assert states(engine) == {"amount": "pending"}
    ev.evaluate([], at(90))  # cleared while pending: dropped, never notified
    assert states(engine) == {}
    for t in (100, 160, 220):
        ev.evaluate([drift()], at(t))
    assert states(engine) == {"amount": "firing"}
    ev.evaluate([drift()], at(250))
    assert len(outbox(engine)) == 1


def test_grouping_batches_columns_and_holds_new_ones_for_group_interval(
    engine: Engine, make_evaluator: Any
) -> None:
    ev: Evaluator = make_evaluator()
    ev.evaluate([drift(column="a"), drift(column="b"), drift(model="churn", column="a")], at(0))
    ev.evaluate([drift(column="a"), drift(column="b"), drift(model="churn", column="a")], at(30))
    notes = outbox(engine)
    assert sorted((n.group_labels["model"], len(n.alerts)) for n in notes) == [
        ("churn", 1),
        ("fraud", 2),
    ]
    three = [
        drift(column="a"),
        drift(column="b"),
        drift(column="c"),
        drift(model="churn", column="a"),
    ]
    ev.evaluate(three, at(60))
    ev.evaluate(three, at(329))
    assert len(outbox(engine)) == 2  # c is held until group_interval after the last flush
    ev.evaluate(three, at(330))
    notes = outbox(engine)
    assert len(notes) == 3 and len(notes[2].alerts) == 3
    ev.evaluate(three, at(30 + 4 * 3600 - 1))
    assert len(outbox(engine)) == 3
    ev.evaluate(three, at(30 + 4 * 3600))  # repeat_interval: churn's first
    assert [n.group_labels["model"] for n in outbox(engine)][3:] == ["churn"]
    ev.evaluate(three, at(330 + 4 * 3600))  # then fraud's
    assert [n.group_labels["model"] for n in outbox(engine)][3:] == ["churn", "fraud"]


def test_flapping_signal_is_bounded_by_group_interval(engine: Engine, make_evaluator: Any) -> None:
    ev: Evaluator = make_evaluator()
    for i in range(0, 3600, 10):  # one hour, crossing the threshold every 10 s evaluation
        ev.evaluate([drift(firing=(i // 10) % 2 == 0)], at(i))
    notes = outbox(engine)
    # At most one firing and one resolved per 5-minute group interval (+ the first pair).
    assert 2 <= len(notes) <= 2 * (3600 // 300 + 1)
    assert all(a.status != b.status for a, b in zip(notes, notes[1:], strict=False))


def test_keep_firing_for_damps_flapping_to_one_notification(engine: Engine) -> None:
    rule = alerts_config().rules[0].model_dump(by_alias=True)
    ev = Evaluator(engine, alerts_config(rules=[{**rule, "keep_firing_for": "1m"}]))
    for i in range(0, 3600, 10):
        ev.evaluate([drift(firing=(i // 10) % 2 == 0)], at(i))
    assert [n.status for n in outbox(engine)] == ["firing"]


def test_rollback_action_queues_one_request_per_firing_episode(engine: Engine) -> None:
    cfg = alerts_config(
        rules=[{"name": "GateFailed", "kind": "guard", "action": "rollback", "receivers": ["hook"]}]
    )
    ev = Evaluator(engine, cfg)
    from alerts.base import Signal

    verdict = Signal("guard", {"model": "fraud", "version": "4"}, 0.07, 0.01, True, at(0))
    ev.evaluate([verdict], at(0))
    ev.evaluate([verdict], at(60))
    with transaction(engine) as s:
        rows = s.scalars(
            select(AlertNotification).where(AlertNotification.kind == "rollback")
        ).all()
        payloads = [r.payload for r in rows]
    assert len(payloads) == 1
    assert payloads[0]["model"] == "fraud" and payloads[0]["version"] == "4"


def test_kinds_scope_leaves_other_rules_alone(engine: Engine, make_evaluator: Any) -> None:
    ev: Evaluator = make_evaluator()
    ev.evaluate([drift()], at(0))
    ev.evaluate([], at(60), kinds={"ingest_lag"})
    assert states(engine) == {"amount": "firing"}
    ev.evaluate([], at(120), kinds={"drift"})
    assert states(engine) == {"amount": "resolved"}


def updated(engine: Engine) -> dict[str, Any]:
    with transaction(engine) as s:
        return {r.labels["column"]: r.updated_at for r in s.scalars(select(AlertState))}


def test_updated_at_moves_on_a_change_not_on_every_evaluation(
    engine: Engine, make_evaluator: Any
) -> None:
    """The API lists alerts newest change first: a still-firing alert keeps its place."""
    ev: Evaluator = make_evaluator()
    ev.evaluate([drift()], at(0))
    ev.evaluate([drift()], at(60))
    assert updated(engine)["amount"] == at(0)
    ev.evaluate([drift(firing=False)], at(120))
    assert updated(engine)["amount"] == at(120)
    ev.evaluate([drift(firing=False)], at(180))
    assert updated(engine)["amount"] == at(120)
