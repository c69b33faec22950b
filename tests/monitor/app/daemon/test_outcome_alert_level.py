"""A degraded outcome's alert says at what level Holm's correction decided it: from the stored
results of one evaluation to the webhook body a receiver gets."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alerts import Evaluator
from alerts.base import Notification
from alerts.receivers.webhook import alertmanager_v4
from migrations import upgrade
from monitor.app.daemon.signals import outcome_signals
from monitor.config.alerts import AlertsConfig
from monitor.outcomes import FAMILY_ALPHA, OutcomeResult, wilson
from monitor.outcomes._family import decide
from monitor.results.store import store_outcome_results
from monitor.storage import AlertNotification, make_engine, transaction

# A migrated database (~0.5 s): out of the fast lane.
pytestmark = pytest.mark.slow

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
N = 2000


def _accuracy(region: str | None, value: float) -> OutcomeResult:
    lo, hi = wilson(value * N, N)  # the reported 95% interval
    return OutcomeResult("accuracy", None if region is None else {"region": region}, value,
                         lo, hi, 0.9, 0.03, N, "ok", FAMILY_ALPHA)  # fmt: skip


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """One evaluation of four results: region=eu far below its tolerated level, the rest at
    the baseline, decided together (Holm) and stored."""
    path: Path = tmp_path_factory.mktemp("outcome-level") / "modelwatch.db"
    eng = make_engine(f"sqlite:///{path}")
    upgrade(eng)
    results = [_accuracy(None, 0.9), _accuracy("eu", 0.8), _accuracy("us", 0.9),
               _accuracy("asia", 0.9)]  # fmt: skip
    decided = decide(results, "family")
    assert [r.status for r in decided] == ["ok", "degraded", "ok", "ok"]
    store_outcome_results(eng, "fraud", "3", (T0 - timedelta(hours=1), T0), decided)
    yield eng
    eng.dispose()


def test_the_webhook_body_says_the_level_and_the_family(engine: Engine) -> None:
    signals = outcome_signals(engine, ["fraud"], T0)
    [eu] = [s for s in signals if s.firing]
    assert dict(eu.details) == {
        "level": "0.0063",  # 0.025 / 4: the first of the four Holm tests
        "family": "4",
        "decided": "; decided at level 0.0063 of a family of 4 results, Holm",
    }
    config = AlertsConfig.model_validate({
        "receivers": [{"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/h"}],
        "rules": [{"name": "AccuracyDrop", "kind": "outcome", "receivers": ["hook"]}],
    })  # fmt: skip
    evaluator = Evaluator(engine, config)
    evaluator.evaluate(signals, T0)
    evaluator.evaluate(signals, T0 + timedelta(seconds=30))  # past the group wait
    with transaction(engine) as s:
        [payload] = s.scalars(select(AlertNotification.payload))
    [alert] = alertmanager_v4(Notification.from_json(payload))["alerts"]
    assert alert["annotations"]["summary"] == (
        "accuracy of fraud 3 degraded (slice region=eu; "
        "decided at level 0.0063 of a family of 4 results, Holm)"
    )
    assert alert["annotations"]["description"].endswith(
        "slice region=eu; decided at level 0.0063 of a family of 4 results, Holm."
    )
