"""The numpy-free, scipy-free incomplete gamma tail agrees with scipy on a grid and its edges.

Claims (monitor.detectors._special's docstring): relative error below RTOL wherever scipy's
Q(a, x) is at least 1e-300, for a from 1e-3 to 1e9 and x from the smallest doubles to far in
the tail; the chi-square survival function is scipy's chdtrc; non-finite and out-of-domain
inputs give scipy's answers (NaN where scipy has no value), never an exception.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import chdtrc
from scipy.special import gammaincc as scipy_gammaincc

from monitor.detectors._special import RTOL, chi2_sf, gammaincc


def grid() -> list[tuple[float, float]]:
    points = []
    for a in np.geomspace(1e-3, 1e6, 60).tolist():
        for r in np.geomspace(1e-6, 60.0, 40).tolist():
            # Far below and above a, and within a few standard deviations of it.
            k = r * math.sqrt(a)
            points += [(a, a * r), (a, a + k), (a, max(a - k, 1e-300))]
    return points


def close(got: float, want: float) -> bool:
    if want < 1e-300:  # below: both underflow to 0 or a denormal
        return got < 1e-290
    return abs(got - want) <= RTOL * want


def test_gammaincc_matches_scipy_on_a_grid() -> None:
    bad = [
        (a, x, got, want)
        for a, x in grid()
        if not close(got := gammaincc(a, x), want := float(scipy_gammaincc(a, x)))
    ]
    assert not bad, bad[:5]


@pytest.mark.parametrize("a", [1e7, 1e8, 1e9])
@pytest.mark.parametrize("k", [-3.0, 0.0, 3.0])
def test_gammaincc_large_shapes_match_scipy(a: float, k: float) -> None:
    x = a + k * math.sqrt(a)
    assert close(gammaincc(a, x), float(scipy_gammaincc(a, x)))


@pytest.mark.parametrize(
    ("a", "x"),
    [
        (1.0, 0.0), (0.5, 0.0), (1.0, math.inf), (0.0, 1.0), (math.inf, 1.0), (2.5, 1e5),
        (1e-3, 1e-300), (1e6, 5e-324), (0.0, 0.0), (-1.0, 1.0), (1.0, -1.0), (math.nan, 1.0),
        (1.0, math.nan), (math.inf, math.inf), (-math.inf, 1.0),
    ],
)  # fmt: skip
def test_gammaincc_edges_are_scipys(a: float, x: float) -> None:
    want = float(scipy_gammaincc(a, x))
    got = gammaincc(a, x)
    assert (math.isnan(got) and math.isnan(want)) or close(got, want)


@pytest.mark.parametrize("df", [1, 2, 3, 10, 99, 1000, 2_000_000])
def test_chi2_sf_matches_scipy(df: int) -> None:
    for x in [0.0, 1e-10, 0.5 * df, df, df + 5 * math.sqrt(2 * df), 10.0 * df + 100, 1e6]:
        assert close(chi2_sf(df, x), float(chdtrc(df, x))), (df, x)


@pytest.mark.parametrize(("df", "x"), [(1, -1.0), (0, 1.0), (-1, 1.0), (3, math.nan)])
def test_chi2_sf_out_of_domain_is_scipys(df: float, x: float) -> None:
    want = float(chdtrc(df, x))
    got = chi2_sf(df, x)
    assert (math.isnan(got) and math.isnan(want)) or got == want


def test_no_convergence_is_nan_not_an_answer() -> None:
    assert math.isnan(gammaincc(1e13, 1e13))
