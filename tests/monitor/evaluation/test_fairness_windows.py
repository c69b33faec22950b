"""The evaluate job stores each labelled window's fairness beside its outcome metrics, the same
whether windows are evaluated in a batch or one by one (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from monitor.config import ModelConfig
from monitor.evaluation.windows import WindowEvaluator
from monitor.fairness import evaluate_fairness, groups_of
from monitor.storage import FairnessResultRow, session_factory, transaction
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


def _stored(engine: Engine, start: datetime) -> dict[tuple[str, str, str], Any]:
    t = FairnessResultRow
    with session_factory(engine)() as s:
        rows = s.scalars(select(t).where(t.window_start == start)).all()
    return {(r.attribute, r.slice_key, r.metric): (r.value, r.ci_low, r.status) for r in rows}


def _expected(engine: Engine, start: datetime) -> dict[tuple[str, str, str], Any]:
    summaries = window_summaries(engine, "m", "1", start, start + HOUR)
    fc = CFG.fairness
    assert fc is not None
    found = evaluate_fairness(groups_of(summaries, fc.attributes), fc)
    out = {}
    for r in found:
        key = "" if r.slice is None else f'{{"gender":"{r.slice["gender"]}"}}'
        out[(r.attribute, key, r.metric)] = (r.value, r.ci_low, r.status)
    return out


@pytest.mark.slow  # two evaluations of a migrated database: the full lane
def test_windows_in_a_batch_and_alone_store_their_fairness(engine: Engine) -> None:
    evaluator = WindowEvaluator(engine, [CFG], 3600)
    with transaction(engine) as s:  # two windows changed: evaluated in one batch
        add_joined(s, "m", _pairs(400, 0, T0), CFG, 3600)
        add_joined(s, "m", _pairs(400, 1000, T0 + HOUR), CFG, 3600)
    evaluator.run(T0 + 3 * HOUR)
    for start in (T0, T0 + HOUR):
        got = _stored(engine, start)
        assert got == _expected(engine, start) and len(got) == 4 + 2 * 4
        assert got[("gender", "", "demographic_parity_difference")][2] == "violation"
    with transaction(engine) as s:  # one window changed: evaluated alone
        add_joined(s, "m", _pairs(200, 5000, T0), CFG, 3600)
    evaluator.run(T0 + 3 * HOUR)
    got = _stored(engine, T0)
    assert got == _expected(engine, T0)
    assert (
        got[("gender", '{"gender":"f"}', "selection_rate")]
        != _stored(engine, T0 + HOUR)[("gender", '{"gender":"f"}', "selection_rate")]
    )
