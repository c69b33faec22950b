"""Choices made for power at a calibrated false-alarm rate: divergences on binned numeric
columns compare 8 merged quantile groups; the homogeneity test joins sparse ordered buckets to
their neighbours; L-infinity's test weighs large buckets by their noise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from monitor.detectors import compare, get_detector
from monitor.detectors._base import Pair
from monitor.detectors._coarse import COARSE_BUCKETS, coarse_counts
from monitor.detectors._evidence import homogeneity_p
from monitor.profiles import spec_from_reference

RNG = np.random.default_rng(7)
REFERENCE = RNG.normal(0.0, 1.0, 5000)
SPEC = spec_from_reference("x", REFERENCE, kind="numeric")


def test_continuous_buckets_merge_into_equal_groups() -> None:
    groups = coarse_counts(SPEC.profile(REFERENCE))
    assert groups.shape == (COARSE_BUCKETS,)
    assert groups.sum() == REFERENCE.size
    assert np.allclose(groups / REFERENCE.size, 1 / COARSE_BUCKETS, atol=0.01)


def test_discrete_columns_keep_one_bucket_per_value() -> None:
    values = RNG.binomial(9, 0.4, 2000).astype(float)
    spec = spec_from_reference("d", values, kind="numeric")
    profile = spec.profile(values)
    assert np.array_equal(coarse_counts(profile), profile.counts)


@pytest.mark.parametrize("name", ["jensen_shannon", "hellinger"])
def test_merged_value_is_at_most_the_fine_one(name: str) -> None:
    detector = get_detector(name)
    pair = Pair(SPEC.profile(REFERENCE), SPEC.profile(RNG.normal(0.3, 1.2, 800)))
    fine = detector.statistic(
        pair.reference.counts[None, :].astype(float), pair.current.counts[None, :].astype(float),
        pair,
    )[0]  # fmt: skip
    assert 0.0 < detector.score(pair) <= fine


def test_ordered_pooling_keeps_a_tail_shift() -> None:
    # Mass leaves the rare low values and fills the rare high ones: one pool of both tails
    # cancels it, neighbours keep it.
    ref = np.array([40.0, 300, 2000, 3000, 2000, 300, 40]) * 2
    cur = np.array([0.0, 0, 15, 30, 30, 13, 4])
    ordered, pooled = homogeneity_p(ref, cur, ordered=True), homogeneity_p(ref, cur)
    assert ordered is not None and pooled is not None
    assert ordered < pooled / 10


def test_l_infinity_still_finds_a_new_value_in_bulk() -> None:
    # 1,000 Zipf values: `other` holds a third of the rows, so its noise is down-weighted in
    # the test; a new value arriving in a tenth of the rows is still drift.
    rng = np.random.default_rng(3)
    labels = np.array([f"v{i}" for i in range(1000)])
    weights = 1.0 / np.arange(1, 1001) ** 0.7
    reference = rng.choice(labels, 20_000, p=weights / weights.sum())
    spec = spec_from_reference("c", pd.Series(reference), kind="categorical")
    base = spec.profile(reference)
    current = rng.choice(labels, 1000, p=weights / weights.sum()).astype(object)
    clean = compare(get_detector("l_infinity"), base, spec.profile(pd.Series(current)), 0.1)
    current[:150] = "brand_new"
    moved = compare(get_detector("l_infinity"), base, spec.profile(pd.Series(current)), 0.1)
    assert (clean.status, moved.status) == ("ok", "drift")
    assert moved.value == pytest.approx(0.15, abs=0.02)
