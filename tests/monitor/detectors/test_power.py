"""Choices made for power at a calibrated false-alarm rate: divergences on binned numeric
columns compare 8 merged quantile groups, Hellinger on discrete ones Sturges' count of equal
runs of values; the homogeneity test joins sparse ordered buckets to their neighbours;
L-infinity's test weighs large buckets by their noise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from monitor.detectors import compare, get_detector
from monitor.detectors._base import Pair
from monitor.detectors._coarse import COARSE_BUCKETS, coarse_counts, join_values, sturges
from monitor.detectors._evidence import homogeneity_p
from monitor.detectors.l_infinity import _weights
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


def test_hellinger_compares_a_discrete_column_on_sturges_runs_of_equal_mass() -> None:
    # binomial(9, 0.4), 10 values: Sturges' 5 groups of a fifth of the rows; 3 and 4 hold a
    # quarter each and stand alone, the rest join their neighbours: 0-2, 3, 4, 5-9.
    values = RNG.binomial(9, 0.4, 20_000).astype(float)
    spec = spec_from_reference("d", values, kind="numeric")
    profile = spec.profile(values)
    counts = profile.counts[None, :].astype(float)
    joined, _ = join_values(counts, counts, Pair(profile, profile))
    runs = [(values <= 2).sum(), (values == 3).sum(), (values == 4).sum(), (values >= 5).sum()]
    assert [sturges(k) for k in (1, 2, 3, 4, 10, 64)] == [1, 2, 3, 3, 5, 7]
    assert joined[0].tolist() == runs


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


def test_l_infinity_scales_only_the_pooled_other_in_its_test() -> None:
    # 20 categories of 0.02, one of 0.2 and 0.4 beyond the top 21 (`other`, k ~ 22 buckets):
    # categories count as they are, `other` in units of a 1/k bucket's sampling noise.
    top = np.repeat([f"v{i}" for i in range(21)], [20] * 20 + [200])
    tail = np.array([f"t{i}" for i in range(400)])
    values = pd.Series(np.concatenate([top, tail]))
    profile = spec_from_reference("c", values, top_k=21, kind="categorical").profile(values)
    weights = _weights(Pair(profile, profile))
    share, f = profile.counts[-2] / values.size, 1 / np.count_nonzero(profile.counts)
    assert 0.4 <= share < 0.45 and f < 0.05  # the top 21 are chosen on a sample of the rows
    assert weights[:-2].tolist() == [1.0] * 21
    assert weights[-2] == pytest.approx(np.sqrt(f * (1 - f) / (share * (1 - share))))


def test_l_infinity_still_finds_a_new_value_in_bulk() -> None:
    # 1,000 Zipf values: `other` holds a third of the rows, so its noise is scaled down in the
    # test; a new value arriving in a seventh of the rows is still drift.
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
