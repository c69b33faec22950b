"""Inhibition and silences, table-driven, through the evaluator with an injected clock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alerts._evaluator import Evaluator
from alerts._inhibit import inhibited
from alerts.silences import add_silence, expire_silence, list_silences
from monitor.config.alerts import InhibitRuleConfig
from monitor.errors import ConflictError, InputError, NotFoundError
from monitor.storage import AlertNotification, AlertState, transaction
from tests.alerts.conftest import alerts_config, at, drift, ingest

INGEST_MUTES_DRIFT = {
    "source_matchers": ['kind=~"ingest_lag|no_data"'],
    "target_matchers": ['kind=~"drift|drift_count"'],
    "equal": ["model"],
}


def _config() -> Any:
    base = alerts_config().rules[0].model_dump(by_alias=True)
    lag = {"name": "IngestLag", "kind": "ingest_lag", "receivers": ["hook"], "severity": "critical"}
    return alerts_config(rules=[base, lag], inhibit_rules=[INGEST_MUTES_DRIFT])


def _notified(engine: Engine) -> list[tuple[str, str]]:
    with transaction(engine) as s:
        rows = s.scalars(select(AlertNotification).order_by(AlertNotification.id)).all()
        return sorted(
            (a["labels"]["alertname"], a["labels"]["model"])
            for r in rows
            for a in r.payload["alerts"]
        )


def _muted(engine: Engine) -> dict[tuple[str, str], str | None]:
    with transaction(engine) as s:
        return {
            (r.labels["alertname"], r.labels["model"]): r.muted_by
            for r in s.scalars(select(AlertState))
        }


@pytest.mark.parametrize(
    ("signals", "muted"),
    [
        ([drift(), ingest()], {"fraud"}),  # ingest down for fraud mutes fraud's drift
        ([drift(), ingest(model="churn")], set()),  # another model's outage does not
        ([drift(), ingest(lag=10)], set()),  # ingest healthy: nothing muted
        ([drift(), drift(model="churn"), ingest()], {"fraud"}),
    ],
)
def test_inhibition_table(signals: list[Any], muted: set[str]) -> None:
    cfg = _config()
    from alerts._rules import evaluate_rules

    firing = {fp: c.labels for fp, c in evaluate_rules(cfg.rules, signals).items() if c.active}
    hit = inhibited(firing, [InhibitRuleConfig.model_validate(INGEST_MUTES_DRIFT)])
    assert {firing[fp]["model"] for fp in hit} == muted
    assert all(firing[fp]["kind"] == "drift" for fp in hit)


def test_inhibited_drift_is_tracked_but_not_notified(engine: Engine) -> None:
    ev = Evaluator(engine, _config())
    for t in (0, 30):
        ev.evaluate([drift(), drift(model="churn"), ingest()], at(t))
    assert _notified(engine) == [("FeatureDrift", "churn"), ("IngestLag", "fraud")]
    assert _muted(engine)[("FeatureDrift", "fraud")] == "inhibited"
    for t in (60, 400):  # ingest recovers: fraud's drift is notified after its group timers
        ev.evaluate([drift(), drift(model="churn"), ingest(lag=10)], at(t))
    assert ("FeatureDrift", "fraud") in _notified(engine)


def test_silence_mutes_until_expired(engine: Engine) -> None:
    ev = Evaluator(engine, alerts_config())
    with transaction(engine) as s:
        sil = add_silence(
            s,
            ["model=fraud", 'column=~"am.*"'],
            author="ana",
            comment="INC-7",
            duration=timedelta(hours=1),
            now=at(0),
        )
    for t in (0, 30, 60):
        ev.evaluate([drift(), drift(column="zip")], at(t))
    with transaction(engine) as s:
        muted = {r.labels["column"]: r.muted_by for r in s.scalars(select(AlertState))}
    assert muted == {"amount": f"silence:{sil.id}", "zip": None}
    assert len(_notified(engine)) == 1
    with transaction(engine) as s:
        expire_silence(s, sil.id, at(90))
        assert list_silences(s, at(90)) == []
        assert [x.id for x in list_silences(s, at(90), include_expired=True)] == [sil.id]
    ev.evaluate([drift(), drift(column="zip")], at(400))
    assert len(_notified(engine)) == 1  # amount is new again: it waits group_wait
    ev.evaluate([drift(), drift(column="zip")], at(430))
    assert len(_notified(engine)) == 3  # zip again plus amount, in one notification


def test_silence_runs_out_by_itself(engine: Engine) -> None:
    ev = Evaluator(engine, alerts_config())
    with transaction(engine) as s:
        add_silence(
            s, ["model=fraud"], author="a", comment="c", duration=timedelta(minutes=5), now=at(0)
        )
    for t in (0, 30, 299):
        ev.evaluate([drift()], at(t))
    assert _notified(engine) == []
    ev.evaluate([drift()], at(300))
    ev.evaluate([drift()], at(330))
    assert _notified(engine) == [("FeatureDrift", "fraud")]


def test_silence_input_errors(sqlite_engine: Engine) -> None:
    with transaction(sqlite_engine) as s:
        with pytest.raises(InputError, match="at least one matcher"):
            add_silence(s, [], author="a", comment="c", duration=timedelta(hours=1), now=at(0))
        with pytest.raises(InputError, match="'model~fraud'"):
            add_silence(
                s, ["model~fraud"], author="a", comment="c", duration=timedelta(1), now=at(0)
            )
        with pytest.raises(InputError, match="invalid regex"):
            add_silence(s, ["model=~("], author="a", comment="c", duration=timedelta(1), now=at(0))
        with pytest.raises(NotFoundError, match="no silence with id 99"):
            expire_silence(s, 99, at(0))
        sil = add_silence(s, ["a=b"], author="a", comment="c", duration=timedelta(1), now=at(0))
        expire_silence(s, sil.id, at(1))
        with pytest.raises(ConflictError, match="already expired"):
            expire_silence(s, sil.id, at(2))
