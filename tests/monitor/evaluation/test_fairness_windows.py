"""The evaluate job stores each window's fairness beside its outcome metrics, the same whether
windows are evaluated in a batch or one by one, and with demographic parity over every
prediction counted at ingest, labelled or not (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from collectors._plan import Plan
from collectors._store import mark_windows, merge_counts
from collectors._windows import WindowBatch
from monitor.app.daemon.signals import latest_fairness_rows
from monitor.config import ModelConfig
from monitor.evaluation.windows import WindowEvaluator
from monitor.fairness import evaluate_fairness, groups_of
from monitor.profiles import parse_slice_key, slice_key
from monitor.storage import FairnessResultRow, WindowCount, session_factory, transaction
from monitor.summaries import JoinedPairs, add_joined, window_summaries

T0 = datetime(2026, 3, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
CFG = ModelConfig.model_validate(
    {"name": "m", "slices": ["gender"], "fairness": {"attributes": ["gender"]}}
)


def _pairs(n: int, offset: int, start: datetime) -> JoinedPairs:
    """n pairs in the hour from `start`: women selected at about 0.2, men at 0.5."""
    rng = np.random.default_rng(offset)
    gender = [["f", "m"][i % 2] for i in range(n)]
    selected = rng.random(n) < np.where(np.array(gender) == "f", 0.2, 0.5)
    score = np.where(selected, 0.75, 0.25)
    return JoinedPairs(
        request_id=[f"r{offset + i}" for i in range(n)],
        version=["1"] * n,
        ts=start.timestamp() + np.arange(n, dtype=np.float64) * 3600 / n,
        prediction=score.tolist(),
        label=(rng.random(n) < score).astype(int).tolist(),
        slice_values={"gender": gender},
    )


def _ingest(engine: Engine, pairs: JoinedPairs, start: datetime) -> None:
    """The pairs' predictions counted and their window marked as the collector does."""
    gender = np.array(pairs.slice_values["gender"])
    slices = {slice_key("gender", g): np.flatnonzero(gender == g) for g in ("f", "m")}
    window = WindowBatch(list(range(len(pairs))), {"prediction": list(pairs.prediction)}, {},
                         {"": None, **slices})  # fmt: skip
    plan = Plan(start={}, windows={("m", "1", start.timestamp()): window})
    with transaction(engine) as s:
        merge_counts(s, plan, 3600, {"m": CFG})
        mark_windows(s, plan, 3600)


def _stored(engine: Engine, start: datetime) -> dict[tuple[str, str, str], Any]:
    t = FairnessResultRow
    with session_factory(engine)() as s:
        rows = s.scalars(select(t).where(t.window_start == start)).all()
    return {(r.attribute, r.slice_key, r.metric): (r.value, r.ci_low, r.status) for r in rows}


def _expected(engine: Engine, start: datetime) -> dict[tuple[str, str, str], Any]:
    summaries = window_summaries(engine, "m", "1", start, start + HOUR)
    t = WindowCount
    with session_factory(engine)() as s:
        rows = s.execute(select(t.slice_key, t.scored, t.selected).where(t.window_start == start))
        selections = [(parse_slice_key(k), scored, selected) for k, scored, selected in rows]
    fc = CFG.fairness
    assert fc is not None
    found = evaluate_fairness(groups_of(summaries, fc.attributes, selections), fc)
    out = {}
    for r in found:
        key = "" if r.slice is None else f'{{"gender":"{r.slice["gender"]}"}}'
        out[(r.attribute, key, r.metric)] = (r.value, r.ci_low, r.status)
    return out


@pytest.mark.slow  # two evaluations of a migrated database: the full lane
def test_windows_in_a_batch_and_alone_store_their_fairness(engine: Engine) -> None:
    evaluator = WindowEvaluator(engine, [CFG], 3600)
    batches = [(_pairs(400, 0, T0), T0), (_pairs(400, 1000, T0 + HOUR), T0 + HOUR)]
    for pairs, start in batches:
        _ingest(engine, pairs, start)
    with transaction(engine) as s:  # two windows changed: evaluated in one batch
        for pairs, _ in batches:
            add_joined(s, "m", pairs, CFG, 3600)
    evaluator.run(T0 + 3 * HOUR)
    for start in (T0, T0 + HOUR):
        got = _stored(engine, start)
        assert got == _expected(engine, start) and len(got) == 4 + 2 * 4
        assert got[("gender", "", "demographic_parity_difference")][2] == "violation"
    more = _pairs(200, 5000, T0)
    _ingest(engine, more, T0)
    with transaction(engine) as s:  # one window changed: evaluated alone
        add_joined(s, "m", more, CFG, 3600)
    evaluator.run(T0 + 3 * HOUR)
    got = _stored(engine, T0)
    assert got == _expected(engine, T0)
    assert (
        got[("gender", '{"gender":"f"}', "selection_rate")]
        != _stored(engine, T0 + HOUR)[("gender", '{"gender":"f"}', "selection_rate")]
    )


@pytest.mark.slow
def test_parity_is_over_every_prediction_before_and_after_labels(engine: Engine) -> None:
    """A window's predictions alone give demographic parity (the label-based metrics wait for
    labels); labels for a biased subset (mostly women's selected rows) leave it over every
    prediction, where parity over the labelled rows alone would differ."""
    evaluator = WindowEvaluator(engine, [CFG], 3600)
    pairs = _pairs(600, 0, T0)
    _ingest(engine, pairs, T0)
    evaluator.run(T0 + 3 * HOUR)
    got = _stored(engine, T0)
    score, gender = np.array(pairs.prediction), np.array(pairs.slice_values["gender"])
    rate = {g: float(np.mean(score[gender == g] >= 0.5)) for g in ("f", "m")}
    dp = got[("gender", "", "demographic_parity_difference")]
    assert dp[0] == pytest.approx(rate["m"] - rate["f"]) and dp[2] == "violation"
    assert got[("gender", '{"gender":"f"}', "true_positive_rate")][2] == "insufficient_data"
    with session_factory(engine)() as s:
        reason = s.scalar(select(FairnessResultRow.reason).where(
            FairnessResultRow.metric == "equal_opportunity_difference"))  # fmt: skip
    assert reason == "no labels yet"
    keep = [i for i in range(600) if gender[i] == "m" or score[i] >= 0.5 or i % 10 == 0]
    with transaction(engine) as s:
        add_joined(s, "m", pairs.subset(keep, [pairs.label[i] for i in keep]), CFG, 3600)
    evaluator.run(T0 + 3 * HOUR)
    got = _stored(engine, T0)
    assert got[("gender", "", "demographic_parity_difference")][0] == pytest.approx(dp[0])
    assert got[("gender", "", "equal_opportunity_difference")][2] != "insufficient_data"
    labelled = {g: float(np.mean(score[keep][gender[keep] == g] >= 0.5)) for g in ("f", "m")}
    assert abs(labelled["m"] - labelled["f"]) < dp[0] - 0.1
    _ingest(engine, _pairs(300, 7000, T0 + HOUR), T0 + HOUR)  # the next window, no labels yet
    evaluator.run(T0 + 3 * HOUR)
    latest = {r.metric: r.window_start for r in latest_fairness_rows(engine, "m")}
    assert latest["demographic_parity_ratio"] == latest["selection_rate"] == T0 + HOUR
    assert latest["equal_opportunity_difference"] == latest["calibration_error"] == T0
