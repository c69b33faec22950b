"""Detectors: table-driven known values, registry, edge-case policy and properties."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.detectors import (
    MIN_N,
    ConstantThresholds,
    Detector,
    DriftResult,
    Pair,
    benjamini_hochberg,
    compare,
    detector_names,
    get_detector,
    register,
)
from monitor.errors import InputError, RegistryError
from monitor.profiles import ColumnSpec, Profile, spec_from_reference
from tests.properties import examples

CAT = ColumnSpec("c", "categorical", categories=("a", "b"))
NUM = spec_from_reference("x", np.arange(100.0), bins=4)
SYMMETRIC = ["jensen_shannon", "psi", "ks", "chi2", "l_infinity", "hellinger", "missing_rate"]
ALL = sorted(["wasserstein", *SYMMETRIC])


def cat(a: int, b: int, nulls: int = 0) -> Profile:
    return CAT.profile(["a"] * a + ["b"] * b + [None] * nulls)


def score(name: str, ref: Profile, cur: Profile) -> float:
    return get_detector(name).score(Pair(ref, cur))


@pytest.mark.parametrize(
    ("name", "ref", "cur", "expected"),
    [
        ("jensen_shannon", cat(10, 0), cat(0, 10), math.sqrt(math.log(2))),
        ("hellinger", cat(10, 0), cat(0, 10), 1.0),
        ("l_infinity", cat(10, 0), cat(0, 10), 1.0),
        ("l_infinity", cat(50, 50), cat(70, 30), 0.2),
        ("chi2", cat(10, 0), cat(0, 10), 1.0),
        # (0.7-0.5) ln(0.7/0.5) + (0.3-0.5) ln(0.3/0.5), up to the 1e-4 smoothing
        ("psi", cat(50, 50), cat(70, 30), 0.2 * math.log(1.4) - 0.2 * math.log(0.6)),
        ("missing_rate", cat(99, 0, 1), cat(85, 0, 15), 0.14),
        ("jensen_shannon", cat(30, 70), cat(30, 70), 0.0),
    ],
)
def test_known_values(name: str, ref: Profile, cur: Profile, expected: float) -> None:
    assert score(name, ref, cur) == pytest.approx(expected, rel=1e-3, abs=1e-9)


def test_ks_and_wasserstein_on_shifted_numeric() -> None:
    ref = NUM.profile(np.arange(100.0))
    cur = NUM.profile(np.arange(100.0) + 25.0)
    assert score("ks", ref, cur) == pytest.approx(0.25, abs=0.02)
    sd = float(np.std(np.arange(100.0)))
    assert score("wasserstein", ref, cur) == pytest.approx(25.0 / sd, rel=0.02)


def test_registry_rejects_duplicates_and_lists_valid_names() -> None:
    assert detector_names() == ALL
    with pytest.raises(RegistryError, match="already registered"):
        register(get_detector("psi"))
    with pytest.raises(RegistryError, match="valid: chi2, hellinger"):
        get_detector("kl")
    with pytest.raises(RegistryError, match="unknown drift method 'nope'"):
        ConstantThresholds(by_method={"nope": 0.2})


def test_method_refuses_wrong_kind() -> None:
    with pytest.raises(InputError, match="does not accept categorical"):
        compare(get_detector("wasserstein"), cat(40, 40), cat(40, 40), 0.1)


def test_small_samples_are_insufficient_not_nan() -> None:
    r = compare(get_detector("jensen_shannon"), cat(100, 100), cat(MIN_N - 1, 0), 0.1)
    assert r.status == "insufficient_data" and r.value is None and r.p_value is None
    assert (r.n_reference, r.n_current) == (200, MIN_N - 1)


def test_results_built_without_the_constructor_equal_constructed_ones() -> None:
    """compare/benjamini_hochberg build DriftResults field by field (cheaper than the frozen
    constructor): every field set, equal to and hashed like a constructed result."""
    small = compare(get_detector("jensen_shannon"), cat(100, 100), cat(MIN_N - 1, 0), 0.1)
    made = DriftResult(
        "c", None, "categorical", "jensen_shannon", None, 0.1, None, 200, MIN_N - 1,
        "insufficient_data", "constant", small.evidence_alpha,
        f"{MIN_N - 1} current rows < min_n 30",
    )  # fmt: skip
    assert small == made and hash(small) == hash(made)
    assert set(vars(small)) == {f.name for f in dataclasses.fields(DriftResult)}
    adjusted = benjamini_hochberg([_result(0.01)], alpha=0.05)[0]
    assert adjusted == dataclasses.replace(_result(0.01), status="drift")
    assert set(vars(adjusted)) == {f.name for f in dataclasses.fields(DriftResult)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        small.status = "ok"  # type: ignore[misc]


def test_thresholds_are_a_strategy() -> None:
    d = get_detector("jensen_shannon")
    assert ConstantThresholds().threshold(d, "c") == d.default_threshold
    assert ConstantThresholds(by_method={"jensen_shannon": 0.3}).threshold(d, "c") == 0.3
    assert ConstantThresholds(by_column={"c": 0.05}).threshold(d, "c") == 0.05


def _result(p: float, value: float = 1.0) -> DriftResult:
    return DriftResult("c", None, "numeric", "ks", value, 0.1, p, 100, 100, "ok")


def test_benjamini_hochberg_adjusts_and_decides() -> None:
    raw = [0.01, 0.04, 0.03, 0.005]
    out = benjamini_hochberg([_result(p) for p in raw], alpha=0.05)
    # sorted 0.005, 0.01, 0.03, 0.04 -> 0.02, 0.02, 0.04, 0.04
    assert [r.p_value for r in out] == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert all(r.status == "drift" for r in out)
    many = benjamini_hochberg([_result(0.04)] + [_result(0.9)] * 9, alpha=0.05)
    assert many[0].status == "ok"  # significant alone, not among ten tests
    small = benjamini_hochberg([_result(1e-9, value=0.05)], alpha=0.05)
    assert small[0].status == "ok"  # significant but below the threshold


counts = st.lists(st.integers(0, 50), min_size=2, max_size=2)


@settings(max_examples=examples(80), deadline=None)
@given(a=counts, b=counts, na=st.integers(0, 5), nb=st.integers(0, 5))
def test_properties_categorical(a: list[int], b: list[int], na: int, nb: int) -> None:
    ref, cur = cat(*a, nulls=na), cat(*b, nulls=nb)
    for name in SYMMETRIC:
        if min(ref.n, cur.n) == 0 and name != "missing_rate":
            continue
        if name == "missing_rate" and min(ref.n + na, cur.n + nb) == 0:
            continue
        v = score(name, ref, cur)
        assert math.isfinite(v) and v >= 0
        assert score(name, ref, ref) == pytest.approx(0.0, abs=1e-12)
        assert score(name, cur, ref) == pytest.approx(v, rel=1e-9, abs=1e-12)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.floats(-200, 300, allow_nan=False), min_size=1, max_size=40),
    st.lists(st.floats(-200, 300, allow_nan=False), min_size=1, max_size=40),
)
def test_properties_numeric_with_empty_bins(a: list[float], b: list[float]) -> None:
    ref, cur = NUM.profile(a), NUM.profile(b)
    for name in ALL:
        v = score(name, ref, cur)
        assert math.isfinite(v) and v >= 0
        assert score(name, ref, ref) == pytest.approx(0.0, abs=1e-9)


def test_every_detector_documents_itself() -> None:
    for name in ALL:
        d: Detector = get_detector(name)
        module = __import__(d.statistic.__module__, fromlist=["_"])
        assert "Default threshold" in (module.__doc__ or ""), name
        assert d.default_threshold > 0 and d.kinds
