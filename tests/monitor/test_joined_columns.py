"""Column-wise outcome summaries of joined pairs equal the per-pair computation, exactly."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from monitor.config import ModelConfig, parse_config
from monitor.outcomes import MulticlassSummary
from monitor.outcomes.from_summary import evaluate_summaries
from monitor.outcomes.summary import (
    OutcomeSummary,
    add_pairs,
    new_summary,
    pair_values,
    summary_to_bytes,
)
from monitor.profiles import OVERALL, slice_key
from monitor.summaries import JoinedPairs, summarize_pairs
from tests.properties import examples

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WINDOW_S = 600.0


def per_pair(
    rows: list[dict[str, Any]], cfg: ModelConfig, sign: int
) -> dict[tuple[str, datetime, str], OutcomeSummary]:
    """The reference: one pair at a time into its groups, then one vectorised add per group."""
    groups: dict[tuple[str, datetime, str], tuple[list[Any], list[Any]]] = {}
    for pair in rows:
        k = math.floor(pair["ts"].timestamp() / WINDOW_S)
        start = datetime.fromtimestamp(k * WINDOW_S, UTC)
        y, s = pair_values(pair["label"], pair["prediction"], cfg.outcomes.task, None)
        values = pair["slice_values"]
        for key in [OVERALL] + [slice_key(c, values.get(c)) for c in cfg.slices]:
            ys, ss = groups.setdefault((pair["version"], start, key), ([], []))
            ys.append(y)
            ss.append(s)
    out = {}
    for group, (ys, ss) in groups.items():
        summary = new_summary(cfg.outcomes.task, cfg.outcomes.threshold)
        add_pairs(summary, ys, ss, sign)
        out[group] = summary
    return out


def model(task: str) -> ModelConfig:
    doc = {"name": "m", "slices": ["region", "tier"], "outcomes": {"task": task}}
    return parse_config({"models": [doc]}, env={}).models[0]


numbers = st.one_of(
    st.sampled_from([0, 1, 0.0, 1.0, True, False, None, math.nan, math.inf, 2, -1.5]),
    st.floats(0, 1),
    st.floats(-1e6, 1e6),
)
scores = st.one_of(
    numbers,
    st.sampled_from(["0.25", "x", "", [0.2, 0.8], [], {"p": 0.7}, {"a": 0.1, "b": 0.9}]),
)
classes = st.one_of(
    st.sampled_from(["cat", "dog", 1, 2.0, 2.5, "", None, True, math.nan, {"cat": 0.6}]),
    # class probabilities: a list (class = index) or a map, some not probabilities at all
    st.lists(st.floats(0, 1), min_size=1, max_size=4),
    st.dictionaries(st.sampled_from(["cat", "dog", "1", "2", "2.0"]), st.floats(0, 1), min_size=1),
    st.sampled_from([[0.5, 1.5], [0.2, math.nan], {"cat": -0.1, "dog": 1.0}, [0.0, 1.0, 0.0]]),
)
slice_values = st.dictionaries(
    st.sampled_from(["region", "tier"]),
    st.sampled_from(["eu", "us", None, 3, 3.0, True, 1, math.nan, "apac"]),
)


@st.composite
def batches(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    task = draw(st.sampled_from(["classification", "regression", "multiclass"]))
    side = classes if task == "multiclass" else scores
    n = draw(st.integers(0, 40))
    rows = [
        {
            "request_id": f"r{i}",
            "version": draw(st.sampled_from(["1", "2"])),
            # microsecond event times spread over a few windows
            "ts": T0 + timedelta(microseconds=draw(st.integers(-(10**9), 3 * 10**9))),
            "label": draw(side),
            "prediction": draw(side),
            "slice_values": draw(slice_values),
        }
        for i in range(n)
    ]
    return task, rows


@settings(max_examples=examples(300), deadline=None)
@given(batches(), st.sampled_from([1, -1]))
@example(("classification", []), 1)
@example(
    (
        "multiclass",
        [{"request_id": "r", "version": "1", "ts": T0, "label": 1, "prediction": [0.3, 0.7],
          "slice_values": {}},
         {"request_id": "s", "version": "1", "ts": T0, "label": "dog",
          "prediction": {"cat": 0.2, "dog": 0.8}, "slice_values": {"region": "eu"}}],
    ),
    1,
)  # fmt: skip
@example(("regression", []), 1)
@example(
    (
        "classification",
        [{"request_id": "r", "version": "1", "ts": T0, "label": 1, "prediction": 0.9,
          "slice_values": {}}],
    ),
    1,
)  # fmt: skip
def test_column_wise_summaries_equal_the_per_pair_path(
    batch: tuple[str, list[dict[str, Any]]], sign: int
) -> None:
    task, rows = batch
    cfg = model(task)
    want = per_pair(rows, cfg, sign)
    got = summarize_pairs(JoinedPairs.from_rows(rows, cfg.slices), cfg, WINDOW_S, sign)
    assert got.keys() == want.keys()
    for key, summary in want.items():
        # Same counts and the same float sums, bit for bit.
        assert summary_to_bytes(got[key]) == summary_to_bytes(summary), key
        if sign == 1 and summary.n:
            assert _metrics(got[key], task) == _metrics(summary, task), key


def test_multiclass_probabilities_are_scored_alike_in_both_paths() -> None:
    cfg = model("multiclass")
    rng = np.random.default_rng(7)
    rows = [
        {"request_id": f"r{i}", "version": "1", "ts": T0 + timedelta(seconds=i),
         "label": int(rng.integers(0, 3)), "slice_values": {"region": ["eu", "us"][i % 2]},
         "prediction": rng.dirichlet([1, 1, 1]).tolist() if i % 3 else
                       dict(zip("012", rng.dirichlet([1, 1, 1]).tolist(), strict=True))}
        for i in range(300)
    ]  # fmt: skip
    want = per_pair(rows, cfg, 1)
    got = summarize_pairs(JoinedPairs.from_rows(rows, cfg.slices), cfg, WINDOW_S)
    overall = got[("1", T0, OVERALL)]
    assert isinstance(overall, MulticlassSummary) and set(overall.scores) == {"0", "1", "2"}
    assert all(summary_to_bytes(got[k]) == summary_to_bytes(s) for k, s in want.items())


def _metrics(summary: OutcomeSummary, task: str) -> list[tuple[str, Any, int]]:
    results = evaluate_summaries([(None, summary)], task=task, min_support=1)  # type: ignore[arg-type]
    return [(r.metric, r.value, r.n) for r in results]


def test_one_batch_of_plain_columns_takes_no_per_pair_fallback() -> None:
    cfg = model("classification")
    n = 1000
    rng = np.random.default_rng(1)
    pairs = JoinedPairs(
        request_id=[f"r{i}" for i in range(n)],
        version=["3"] * n,
        ts=T0.timestamp() + np.arange(n) * 1.5,
        prediction=rng.random(n).round(4).tolist(),
        label=rng.integers(0, 2, n).tolist(),
        slice_values={"region": [["eu", "us", None][i % 3] for i in range(n)]},
    )
    got = summarize_pairs(pairs, cfg, WINDOW_S)
    # 1,500 s of pairs: 3 windows x (overall + eu, us, (null) regions + the (null) tier)
    assert len(got) == 3 * 5
    overall = [s for (_, _, k), s in got.items() if k == OVERALL]
    assert sum(s.n for s in overall) == n


def test_columns_of_unequal_length_are_refused() -> None:
    with pytest.raises(ValueError, match="unequal length"):
        JoinedPairs(["a"], ["1"], np.empty(0), [0.5], [1])
