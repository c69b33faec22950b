"""Stored outcome summaries: binary classification payloads, and the JSON ones of earlier releases.

The label join rewrites a window's summaries per batch, so a classification summary is stored as
raw arrays of its non-empty bins; deployments hold JSON payloads written before, which are read
and merged as they are, and rewritten in the new form by the next batch that touches them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import orjson
import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine

from monitor.config import ModelConfig, parse_config
from monitor.errors import CorruptProfileError, InputError
from monitor.outcomes.summary import (
    BINS,
    ClassificationSummary,
    RegressionSummary,
    merge_summaries,
    merged_from_bytes,
    summary_from_bytes,
    summary_to_bytes,
)
from monitor.storage import OutcomeSummaryRow, transaction
from monitor.summaries import JoinedPairs, add_joined, outcome_results

T0 = datetime(2026, 11, 30, tzinfo=UTC)


def _summary(n: int, seed: int = 1) -> ClassificationSummary:
    rng = np.random.default_rng(seed)
    s = ClassificationSummary(0.4)
    y = (rng.random(n) < 0.3).astype(np.float64)
    scores = rng.random(n)
    y[:3], scores[3:5] = np.nan, 1.5  # invalid pairs are counted, not scored
    s.add(y, scores)
    return s


def _equal(a: ClassificationSummary, b: ClassificationSummary) -> bool:
    arrays = ("confusion", "count", "score_sum", "loss_sum")
    same = all(np.array_equal(getattr(a, k), getattr(b, k)) for k in arrays)
    return same and (a.threshold, a.invalid) == (b.threshold, b.invalid)


@pytest.mark.parametrize("n", [0, 1, 50_000])
def test_classification_payload_round_trips_bit_for_bit(n: int) -> None:
    summary = _summary(n)
    payload = summary_to_bytes(summary)
    back = summary_from_bytes(payload)
    assert isinstance(back, ClassificationSummary) and _equal(back, summary)
    assert summary_to_bytes(back) == payload
    if n == 50_000:  # every bin filled: smaller than the JSON form it replaces
        assert int(np.count_nonzero(summary.count)) == 2 * BINS
        assert len(payload) < 0.7 * len(orjson.dumps(summary.to_doc(), option=_NUMPY))


_NUMPY = orjson.OPT_SERIALIZE_NUMPY


def test_json_payloads_of_earlier_releases_are_read() -> None:
    summary = _summary(2_000)
    back = summary_from_bytes(orjson.dumps(summary.to_doc(), option=_NUMPY))
    assert isinstance(back, ClassificationSummary) and _equal(back, summary)
    regression = RegressionSummary()
    regression.add(np.array([1.0, 2.0]), np.array([1.5, 2.0]))
    assert summary_from_bytes(summary_to_bytes(regression)) == regression


def _out_of_range(payload: bytes) -> bytes:
    """The payload with its first cell index past the last bin."""
    head = 4 + 8 + 8 + 4 * 8 + 4
    return payload[:head] + (2 * BINS).to_bytes(2, "little") + payload[head + 2 :]


@pytest.mark.parametrize(
    "damage",
    [lambda p: p[:20], lambda p: p[:-1], lambda p: p + b"\x00", _out_of_range],
    ids=["truncated header", "truncated bins", "trailing bytes", "bin out of range"],
)
def test_a_damaged_payload_is_a_corrupt_summary_not_a_crash(damage: object) -> None:
    payload = summary_to_bytes(_summary(500))
    with pytest.raises(CorruptProfileError, match="outcome summary"):
        summary_from_bytes(damage(payload))  # type: ignore[operator]


@pytest.mark.parametrize("sizes", [[], [0], [7], [0, 0], [1, 3, 0, 50_000], [40] * 24])
def test_merged_from_bytes_equals_the_pairwise_merge(sizes: list[int]) -> None:
    """Payloads summed cell by cell equal each decoded and merged pair by pair, bit for bit
    (none, one, empty ones, one with every bin filled, a day of 24 windows)."""
    payloads = [summary_to_bytes(_summary(n, seed=i)) for i, n in enumerate(sizes)]
    merged = merged_from_bytes(payloads)
    expected = merge_summaries([summary_from_bytes(p) for p in payloads])
    if not sizes:
        assert merged is None and expected is None
        return
    assert isinstance(merged, ClassificationSummary) and isinstance(expected, ClassificationSummary)
    assert _equal(merged, expected)
    assert merged.count.dtype == np.int64 and merged.score_sum.dtype == np.float64


def test_merged_from_bytes_with_json_payloads_and_bad_ones() -> None:
    """A JSON payload among binary ones takes the pairwise path (same result); thresholds that
    differ and a damaged payload fail as the pairwise merge and the decoder do."""
    binary = [summary_to_bytes(_summary(30, seed=s)) for s in (1, 2)]
    old = orjson.dumps(_summary(20, seed=3).to_doc(), option=_NUMPY)
    merged = merged_from_bytes([*binary, old])
    expected = merge_summaries([summary_from_bytes(p) for p in [*binary, old]])
    assert isinstance(merged, ClassificationSummary) and isinstance(expected, ClassificationSummary)
    assert _equal(merged, expected)
    other = ClassificationSummary(0.7)
    other.add(np.array([1.0, 0.0]), np.array([0.9, 0.2]))
    with pytest.raises(InputError, match="thresholds 0.4 and 0.7"):
        merged_from_bytes([*binary, summary_to_bytes(other)])
    with pytest.raises(CorruptProfileError, match="outcome summary"):
        merged_from_bytes([binary[0], binary[1][:-1]])


def _model() -> ModelConfig:
    return parse_config({"models": [{"name": "m", "slices": ["region"]}]}, env={}).models[0]


def _pairs(n: int, offset: int) -> JoinedPairs:
    rng = np.random.default_rng(offset)
    return JoinedPairs(
        request_id=[f"r{offset + i}" for i in range(n)],
        version=["1"] * n,
        ts=T0.timestamp() + np.arange(offset, offset + n, dtype=np.float64),
        prediction=rng.random(n).round(4).tolist(),
        label=rng.integers(0, 2, n).tolist(),
        slice_values={"region": [["eu", "us"][i % 2] for i in range(n)]},
    )


def test_a_window_stored_as_json_merges_with_the_next_batch(engine: Engine) -> None:
    """A deployment's JSON summaries (written before this format) keep their pairs: the next
    batch's pairs add to them, and the window's metrics equal those of all pairs."""
    cfg, first, second = _model(), _pairs(300, 0), _pairs(400, 300)
    with transaction(engine) as s:
        add_joined(s, "m", first, cfg, 3600)
    t = OutcomeSummaryRow
    with transaction(engine) as s:  # as an earlier release stored them
        for key, payload in s.execute(select(t.slice_key, t.payload)).all():
            doc = summary_from_bytes(payload).to_doc()
            stmt = update(t).where(t.slice_key == key).values(payload=orjson.dumps(doc))
            s.execute(stmt)
    with transaction(engine) as s:
        add_joined(s, "m", second, cfg, 3600)
    got = outcome_results(engine, cfg, "1", T0, T0 + timedelta(hours=1))
    with transaction(engine) as s:
        payloads = s.execute(select(t.payload)).scalars().all()
    assert payloads and all(bytes(p[:4]) == b"MWC1" for p in payloads)
    with transaction(engine) as s:
        s.execute(delete(t))
        add_joined(s, "m", JoinedPairs.concat([first, second], ["region"]), cfg, 3600)
    want = outcome_results(engine, cfg, "1", T0, T0 + timedelta(hours=1))
    assert [(r.metric, r.slice, r.n, r.value) for r in got] == [
        (r.metric, r.slice, r.n, r.value) for r in want
    ]
    assert next(r.n for r in got if r.slice is None) == 700
