"""Day and week results stored by the evaluate job: one merged comparison per period.

On SQLite and PostgreSQL. The stored day equals what the results API's `?granularity=1d`
computes (`monitor.evaluation.periods`, the one owner of period merging) and the one-shot
comparison of the
day's concatenated traffic; outcome metrics of the day equal the raw pairs' metrics. The
current, incomplete day is evaluated again when one of its windows changes (at most once per
`scheduler.period_interval_s`, at once when it has ended); retention deletes
the rows; a corrupt window fails its periods as their own job items, not its neighbours.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pandas as pd
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from collectors import Ingestor, RawRecord
from monitor.app.daemon._retention import purge
from monitor.baselines.store import load_baseline, save_baseline
from monitor.config import CollectConfig, ModelConfig
from monitor.config._monitoring import OutcomeConfig
from monitor.detectors import evaluate
from monitor.evaluation.period_jobs import period_interval
from monitor.evaluation.periods import (
    PERIODS,
    DayMerges,
    Period,
    period_drift,
    period_of,
    period_outcomes,
    period_profiles,
)
from monitor.evaluation.windows import Window, WindowEvaluator, window_profiles
from monitor.failures import list_failures
from monitor.outcomes import evaluate_outcomes
from monitor.profiles import profile_frame, specs_for
from monitor.storage import (
    DayCount,
    DayOutcomeSummary,
    DriftPeriodResultRow,
    OutcomePeriodResultRow,
    OutcomeSummaryRow,
    WindowProfile,
    session_factory,
    transaction,
)
from tests.collectors.conftest import T0, event

HOUR = 3600.0
METRICS = ["accuracy", "precision", "recall"]
MODEL = ModelConfig(
    name="fraud",
    slices=["region"],
    outcomes=OutcomeConfig(metrics=METRICS, min_support=1),
)
DAY = Period(datetime.fromtimestamp(T0, UTC), datetime.fromtimestamp(T0 + 86400, UTC))


def _events(first: int, n: int, hour: int) -> list[dict[str, Any]]:
    return [event(i, ts=T0 + hour * HOUR + i % 600) for i in range(first, first + n)]


def _label(e: dict[str, Any]) -> dict[str, Any]:
    y = int(e["features"]["amount"] % 3 == 0)
    return {
        "request_id": e["request_id"],
        "model": "fraud",
        "label": y,
        "timestamp": e["timestamp"],
    }


def _ingest(engine: Engine, items: list[dict[str, Any]]) -> None:
    settings = CollectConfig(allowed_lateness=timedelta(days=3650))
    ing = Ingestor(engine, "t", "http", [MODEL], settings)
    offset = int(items[0]["timestamp"] * 10) % 10**9  # distinct offsets per batch
    ing.ingest(
        [RawRecord("t", offset + i, offset + i + 1, orjson.dumps(x)) for i, x in enumerate(items)]
    )


def _frame(events: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(
        [{**e["features"], "prediction": e["prediction"], **e["metadata"]} for e in events]
    )


@pytest.fixture
def day(engine: Engine) -> list[dict[str, Any]]:
    """A baseline, and three hourly windows of one day with a label for every prediction."""
    reference = _frame([event(i) for i in range(400)])
    cols = ["amount", "country", "prediction"]
    save_baseline(
        engine, "fraud", "1", profile_frame(reference, specs_for(cols, reference), ["region"])
    )
    events = [e for h in range(3) for e in _events(1000 * h + 5, 150, h)]
    for e in events[::3]:  # a shifted share: the day drifts somewhat
        e["features"]["amount"] += 40
    _ingest(engine, events + [_label(e) for e in events])
    return events


def _stored(engine: Engine, table: Any, period: str) -> dict[tuple[str, ...], Any]:
    with session_factory(engine)() as s:
        rows = s.scalars(select(table).where(table.period == period)).all()
    if table is DriftPeriodResultRow:
        return {(r.slice_key, r.column, r.method): r for r in rows}
    return {(r.slice_key, r.metric): r for r in rows}


def _key(doc: dict[str, Any], *fields: str) -> tuple[str, ...]:
    slice_ = "" if doc["slice"] is None else orjson.dumps(doc["slice"]).decode()
    return (slice_, *(doc[f] for f in fields))


def test_the_stored_day_is_the_merged_comparison(engine: Engine, day: list[dict[str, Any]]) -> None:
    WindowEvaluator(engine, [MODEL], HOUR).run()
    stored = _stored(engine, DriftPeriodResultRow, "day")
    api = {_key(r.to_dict(), "column", "method"): r for r in period_drift(engine, MODEL, "1", DAY)}
    assert stored.keys() == api.keys() and len(stored) >= 10
    for key, r in api.items():
        row = stored[key]
        assert (row.period_start, row.period_end) == (DAY.start, DAY.end)
        assert (row.value, row.status, row.n_current) == (r.value, r.status, r.n_current), key
    assert stored[("", "amount", "wasserstein")].n_current == len(day)
    # The one-shot comparison of the day's concatenated traffic on the baseline's specs.
    baseline = load_baseline(engine, "fraud", "1")
    assert stored[("", "region", "jensen_shannon")].status == "ok"
    current = profile_frame(_frame(day), baseline.specs, ["region"])
    for r in evaluate(baseline, current, min_n=MODEL.drift.min_n):
        got = stored[_key(r.to_dict(), "column", "method")]
        assert got.value == pytest.approx(r.value, rel=1e-9, abs=1e-12)
        assert (got.n_current, got.status) == (r.n_current, r.status)


def test_the_stored_day_and_week_outcomes_are_the_raw_pairs_metrics(
    engine: Engine, day: list[dict[str, Any]]
) -> None:
    WindowEvaluator(engine, [MODEL], HOUR).run()
    raw = evaluate_outcomes(
        [_label(e)["label"] for e in day],
        [e["prediction"] for e in day],
        slices={"region": [e["metadata"]["region"] for e in day]},
        metrics=METRICS,
        min_support=1,
    )
    week = period_of(DAY.start, PERIODS["week"])
    api = {_key(r.to_dict(), "metric"): r for r in period_outcomes(engine, MODEL, "1", week)}
    for name in ("day", "week"):  # the week holds only this day's traffic
        stored = _stored(engine, OutcomePeriodResultRow, name)
        assert {_key(r.to_dict(), "metric") for r in raw} == stored.keys() == api.keys()
        for r in raw:
            row = stored[_key(r.to_dict(), "metric")]
            assert (row.value, row.n) == (pytest.approx(r.value), r.n)
            assert (row.ci_low, row.ci_high) == (
                api[_key(r.to_dict(), "metric")].ci_low,
                api[_key(r.to_dict(), "metric")].ci_high,
            )
    assert stored[("", "accuracy")].period_start == week.start


def test_the_current_day_is_evaluated_again_when_a_window_changes(
    engine: Engine, day: list[dict[str, Any]]
) -> None:
    evaluator = WindowEvaluator(engine, [MODEL], HOUR)
    evaluator.run()
    before = _stored(engine, DriftPeriodResultRow, "day")[("", "amount", "wasserstein")].n_current
    assert evaluator.run() == []  # idle: the periods are not evaluated again either
    later = _events(9000, 40, 5)  # a new window of the same, still incomplete day
    _ingest(engine, later)
    evaluator.run()
    stored = _stored(engine, DriftPeriodResultRow, "day")
    assert stored[("", "amount", "wasserstein")].n_current == before + 40
    week = _stored(engine, DriftPeriodResultRow, "week")
    assert week[("", "amount", "wasserstein")].n_current == before + 40
    purge(engine, cutoff=datetime.now(UTC) + timedelta(days=1))
    assert _stored(engine, DriftPeriodResultRow, "day") == {}
    assert _stored(engine, OutcomePeriodResultRow, "week") == {}


def test_a_period_waits_for_its_failing_window(engine: Engine, day: list[dict[str, Any]]) -> None:
    start = DAY.start + timedelta(hours=1)
    where = WindowProfile.window_start == start
    with transaction(engine) as s:
        saved = s.execute(select(WindowProfile).where(where)).scalars().all()
        payloads = {(p.slice_key, p.column): p.payload for p in saved}
        s.execute(WindowProfile.__table__.update().where(where).values(payload=b"\x00bad"))
    evaluator = WindowEvaluator(engine, [MODEL], HOUR)
    evaluator.run(now=DAY.start)
    # One failure: the window. Its day and week are not stored from a partial merge, and not
    # reported as failures of their own; outcomes (summaries, not profiles) are stored.
    items = [f.item for f in list_failures(engine, "evaluate")]
    assert items == [f"drift fraud/1 {start.isoformat()}"]
    assert _stored(engine, DriftPeriodResultRow, "day") == {}
    assert _stored(engine, OutcomePeriodResultRow, "day") != {}
    with transaction(engine) as s:  # repaired
        for (key, column), payload in payloads.items():
            s.execute(
                WindowProfile.__table__.update()
                .where(where, WindowProfile.slice_key == key, WindowProfile.column == column)
                .values(payload=payload)
            )
    evaluator.run(now=DAY.start + timedelta(hours=2))  # the window's retry time has come
    assert list_failures(engine, "evaluate") == []
    stored = _stored(engine, DriftPeriodResultRow, "day")
    assert stored[("", "amount", "wasserstein")].n_current == len(day)


def test_a_period_waits_for_its_failing_outcome_window(
    engine: Engine, day: list[dict[str, Any]]
) -> None:
    start = DAY.start + timedelta(hours=1)
    where = OutcomeSummaryRow.window_start == start
    with transaction(engine) as s:
        s.execute(OutcomeSummaryRow.__table__.update().where(where).values(payload=b"\x00bad"))
    WindowEvaluator(engine, [MODEL], HOUR).run(now=DAY.start)
    # One failure, the outcome window (found by its stored start): its day and week wait and
    # are not reported as failures of their own; drift (profiles) is stored.
    failures = list_failures(engine, "evaluate")
    assert [(f.item, f.window_start) for f in failures] == [
        (f"outcomes fraud/1 {start.isoformat()}", start)
    ]
    assert _stored(engine, OutcomePeriodResultRow, "day") == {}
    assert _stored(engine, DriftPeriodResultRow, "day") != {}


def test_the_current_week_is_evaluated_every_tick_from_stored_days(
    engine: Engine, day: list[dict[str, Any]]
) -> None:
    evaluator = WindowEvaluator(engine, [MODEL], HOUR)
    during = DAY.start + timedelta(hours=6)  # the day's week is still running
    evaluator.run(now=during)
    _ingest(engine, _events(9000, 40, 5))
    evaluator.run(now=during)
    key = ("", "amount", "wasserstein")
    assert _stored(engine, DriftPeriodResultRow, "day")[key].n_current == len(day) + 40
    assert _stored(engine, DriftPeriodResultRow, "week")[key].n_current == len(day) + 40
    with session_factory(engine)() as s:  # the day's merge, which the week merges
        days = s.scalars(select(DayCount).where(DayCount.slice_key == "")).all()
        n_pairs = s.scalars(select(DayOutcomeSummary.n).where(DayOutcomeSummary.slice_key == ""))
        assert [(d.day_start, d.events) for d in days] == [(DAY.start, len(day) + 40)]
        assert list(n_pairs) == [len(day)]  # the 40 new predictions have no labels


def test_a_week_of_two_days_is_the_merge_of_their_windows(
    engine: Engine, day: list[dict[str, Any]]
) -> None:
    week = period_of(DAY.start, PERIODS["week"])
    second = [e for h in (24, 30) for e in _events(20000 + 1000 * h, 60, h)]
    _ingest(engine, second + [_label(e) for e in second])
    WindowEvaluator(engine, [MODEL], HOUR).run()
    stored = _stored(engine, DriftPeriodResultRow, "week")
    api = {_key(r.to_dict(), "column", "method"): r for r in period_drift(engine, MODEL, "1", week)}
    assert stored.keys() == api.keys()
    for key, r in api.items():  # merged from 2 stored days, or from 5 windows: the same
        assert stored[key].n_current == r.n_current, key
        assert stored[key].value == pytest.approx(r.value, rel=1e-9, abs=1e-12), key
    outcomes = _stored(engine, OutcomePeriodResultRow, "week")
    api_outcomes = period_outcomes(engine, MODEL, "1", week)
    assert {_key(r.to_dict(), "metric"): r.n for r in api_outcomes} == {
        k: r.n for k, r in outcomes.items()
    }
    assert outcomes[("", "accuracy")].n == len(day) + len(second)


def test_a_day_is_merged_from_the_tick_s_windows_only_when_it_holds_all_of_them(
    engine: Engine, day: list[dict[str, Any]]
) -> None:
    starts = [DAY.start + timedelta(hours=h) for h in range(3)]
    windows = [Window("fraud", "1", s, s + timedelta(hours=1)) for s in starts]
    merges, partial = DayMerges(), DayMerges()
    for w in windows:
        merges.add("1", w.start, window_profiles(engine, w, ["region"]))
    partial.add("1", starts[0], window_profiles(engine, windows[0], ["region"]))
    want = period_profiles(engine, "fraud", "1", DAY, ["region"])
    with session_factory(engine)() as s:
        got = merges.day(s, "fraud", "1", DAY)
        assert partial.day(s, "fraud", "1", DAY) is None  # 2 of its windows not seen: read
        assert merges.day(s, "fraud", "2", DAY) is None
    assert got is not None and got.rows == want.rows and got.profiles.keys() == want.profiles.keys()
    for key, prof in want.profiles.items():
        assert got.profiles[key].n == prof.n, key
        assert got.profiles[key].to_bytes() == prof.to_bytes(), key


def test_an_open_day_is_evaluated_again_at_most_once_per_interval(
    engine: Engine, day: list[dict[str, Any]]
) -> None:
    clock = [DAY.start + timedelta(hours=6)]  # the day and its week still running

    def evaluator() -> WindowEvaluator:  # a new one each time: what waits is stored, not held
        return WindowEvaluator(engine, [MODEL], HOUR, period_interval_s=300, clock=lambda: clock[0])

    def day_n() -> int | None:
        row = _stored(engine, DriftPeriodResultRow, "day").get(("", "amount", "wasserstein"))
        return None if row is None else row.n_current

    evaluator().run()
    assert day_n() is None  # its first change waits for the interval too
    clock[0] += timedelta(seconds=200)
    _ingest(engine, _events(9000, 40, 5))
    evaluator().run()
    assert day_n() is None  # 200 s since its first change not evaluated
    clock[0] += timedelta(seconds=100)
    evaluator().run()  # nothing changed since, but the day's change has waited 300 s
    assert day_n() == len(day) + 40
    week = _stored(engine, DriftPeriodResultRow, "week")[("", "amount", "wasserstein")]
    assert week.n_current == len(day) + 40
    clock[0] += timedelta(seconds=10)
    _ingest(engine, _events(9100, 30, 6))
    evaluator().run()
    assert day_n() == len(day) + 40  # evaluated 10 s ago: waits while its windows change
    clock[0] = DAY.end  # the day has ended: its final evaluation at once
    evaluator().run()
    assert day_n() == len(day) + 70


def test_the_default_period_interval_scales_with_the_fleet() -> None:
    assert period_interval(None, 10, 60.0) == 0.0  # 10 s is within a tick: every tick
    assert period_interval(None, 1000, 10.0) == 900.0  # an open day every 15 minutes
    assert period_interval(None, 400, 60.0) == 400.0
    # open windows: a quarter second per model, up to 5 minutes
    assert period_interval(None, 1000, 10.0, 0.25, 300.0) == 250.0
    assert period_interval(None, 5000, 10.0, 0.25, 300.0) == 300.0
    assert period_interval(42.0, 5000, 10.0) == 42.0 and period_interval(0.0, 5000, 10.0) == 0.0
