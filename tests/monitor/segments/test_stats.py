"""The vectorised tests agree with scipy's one-at-a-time ones; BH agrees with statsmodels."""

from __future__ import annotations

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

from monitor.segments._stats import bh_qvalues, mean_tests, rate_tests


def test_rate_tests_are_one_sided_fisher() -> None:
    n, total = 1000, 120
    count = np.array([50.0, 200.0, 300.0, 100.0])
    errors = np.array([15.0, 30.0, 20.0, 12.0])
    p, effect, half = rate_tests(count, errors, n, total)
    for i in range(4):
        table = [[errors[i], count[i] - errors[i]],
                 [total - errors[i], n - count[i] - (total - errors[i])]]  # fmt: skip
        expected = stats.fisher_exact(table, alternative="greater").pvalue
        if effect[i] > 0:
            assert np.isclose(p[i], expected)
        else:
            assert p[i] == 1.0 and expected >= 0.5
    assert (half > 0).all()


def test_mean_tests_are_one_sided_welch() -> None:
    rng = np.random.default_rng(0)
    loss = rng.exponential(size=500)
    inside = np.zeros(500, dtype=bool)
    inside[:80] = True
    loss[:80] += 0.3
    p, effect, half = mean_tests(np.array([80.0]), np.array([loss[:80].sum()]),
                                 np.array([(loss[:80] ** 2).sum()]), 500, loss.sum(),
                                 (loss**2).sum())  # fmt: skip
    expected = stats.ttest_ind(loss[inside], loss[~inside], equal_var=False, alternative="greater")
    assert np.isclose(p[0], expected.pvalue)
    assert np.isclose(effect[0], loss[inside].mean() - loss[~inside].mean())
    assert half[0] > 0


def test_bh_matches_statsmodels() -> None:
    p = np.random.default_rng(1).uniform(size=200) ** 3
    assert np.allclose(bh_qvalues(p), multipletests(p, method="fdr_bh")[1])
    assert bh_qvalues(np.empty(0)).size == 0
