"""Reference-derived drift thresholds: bounds, floor, fallback, and what they flag."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.detectors import (
    Bound,
    ConstantThresholds,
    ReferenceThresholds,
    Spread,
    Variability,
    chunk_profiles,
    evaluate,
    get_detector,
    profile_variability,
    reference_variability,
    threshold_strategy,
)
from monitor.errors import InputError, RegistryError
from monitor.profiles import ProfileSet, profile_frame, specs_for
from tests.properties import examples

# One level per tenth of the reference: `wander` moves this much (in sd) period to period.
LEVELS = [0.0, 0.5, -0.4, 0.8, -0.7, 0.2, -0.2, 0.6, -0.5, 0.1]
N_REF = 20_000


def reference_frame(seed: int = 1, n: int = N_REF) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    level = np.asarray(LEVELS)[np.arange(n) * len(LEVELS) // n]
    return pd.DataFrame(
        {
            "stable": rng.normal(0, 1, n),
            "wander": rng.normal(0, 1, n) + level,
            "channel": rng.choice(["web", "app", "pos"], n, p=[0.5, 0.3, 0.2]),
        }
    )


def current_frame(seed: int, stable: float = 0.0, wander: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = N_REF // len(LEVELS)  # a window as large as a reference chunk
    return pd.DataFrame(
        {
            "stable": rng.normal(stable, 1, n),
            "wander": rng.normal(wander, 1, n),
            "channel": rng.choice(["web", "app", "pos"], n, p=[0.5, 0.3, 0.2]),
        }
    )


@pytest.fixture(scope="module")
def reference() -> tuple[pd.DataFrame, ProfileSet, Variability]:
    frame = reference_frame()
    specs = specs_for(list(frame.columns), frame)
    whole = profile_frame(frame, specs)
    return frame, whole, profile_variability(frame, specs, whole, chunks=10)


SPREAD = Variability(10, 100, {("x", "wasserstein"): Spread(0.2, 0.1, 0.4, 10)})


@pytest.mark.parametrize(
    ("strategy", "column", "expected"),
    [
        # mean + 3 std
        (ReferenceThresholds(SPREAD), "x", Bound(0.2 + 3 * 0.1, "reference")),
        (ReferenceThresholds(SPREAD, k=1.0), "x", Bound(0.2 + 0.1, "reference")),
        # below the floor (0.5 × the constant 0.1 = 0.05 < 0.2 here, so raise the fraction)
        (ReferenceThresholds(SPREAD, k=0.0, floor_fraction=3.0), "x", Bound(0.3, "floor")),
        # no spread stored for the column, or no variability at all: the constant bound
        (ReferenceThresholds(SPREAD), "y", Bound(0.1, "constant")),
        (ReferenceThresholds(None), "x", Bound(0.1, "constant")),
        (
            ReferenceThresholds(None, fallback=ConstantThresholds(by_column={"x": 0.4})),
            "x",
            Bound(0.4, "constant"),
        ),
        # the floor scales with the constant bound the fallback would have used
        (
            ReferenceThresholds(
                SPREAD, k=0.0, floor_fraction=0.5, fallback=ConstantThresholds(by_column={"x": 1})
            ),
            "x",
            Bound(0.5, "floor"),
        ),
        (ConstantThresholds(), "x", Bound(0.1, "constant")),
    ],
)
def test_bound_table(strategy: ReferenceThresholds, column: str, expected: Bound) -> None:
    got = strategy.bound(get_detector("wasserstein"), column)
    assert got.source == expected.source
    assert got.value == pytest.approx(expected.value)


@settings(max_examples=examples(200), deadline=None)
@given(
    mean=st.floats(0, 5),
    std=st.floats(0, 5),
    k1=st.floats(0, 10),
    dk=st.floats(0, 10),
    floor=st.floats(0, 3),
)
def test_bound_never_below_floor_and_grows_with_k(
    mean: float, std: float, k1: float, dk: float, floor: float
) -> None:
    v = Variability(10, 100, {("x", "psi"): Spread(mean, std, mean + std, 10)})
    psi = get_detector("psi")
    low = ReferenceThresholds(v, k=k1, floor_fraction=floor).bound(psi, "x")
    high = ReferenceThresholds(v, k=k1 + dk, floor_fraction=floor).bound(psi, "x")
    assert low.value >= floor * psi.default_threshold - 1e-12
    assert high.value >= low.value - 1e-12


def test_variable_column_gets_a_wider_bound_than_a_stable_one(
    reference: tuple[pd.DataFrame, ProfileSet, Variability],
) -> None:
    _, _, variability = reference
    strategy = ReferenceThresholds(variability)
    for method in ("wasserstein", "jensen_shannon", "ks", "psi"):
        d = get_detector(method)
        wander, stable = strategy.bound(d, "wander"), strategy.bound(d, "stable")
        assert wander.source == "reference"
        assert wander.value > 2 * stable.value, method
        assert wander.value > d.default_threshold, method
    # a stable column's Wasserstein spread is pure sampling noise: the floor decides
    assert strategy.bound(get_detector("wasserstein"), "stable") == Bound(0.05, "floor")


@pytest.mark.parametrize(
    ("name", "shift", "thresholds", "drifted"),
    [
        # `wander` at one of its own reference levels: a constant bound alarms, the band not
        ("wander at a reference level", {"wander": 0.5}, "constant", {"wander"}),
        ("wander at a reference level", {"wander": 0.5}, "reference", set()),
        # far beyond the band: flagged by both
        ("wander far out", {"wander": 3.0}, "reference", {"wander"}),
        ("wander far out", {"wander": 3.0}, "constant", {"wander"}),
        # a stable column stays sensitive under the reference strategy
        ("stable moved", {"stable": 0.3}, "reference", {"stable"}),
        ("no change", {}, "reference", set()),
    ],
)
def test_what_each_strategy_flags(
    reference: tuple[pd.DataFrame, ProfileSet, Variability],
    name: str,
    shift: dict[str, float],
    thresholds: str,
    drifted: set[str],
) -> None:
    _, whole, variability = reference
    current = profile_frame(current_frame(7, **shift), whole.specs)
    strategy = threshold_strategy(thresholds, variability)
    results = evaluate(whole, current, thresholds=strategy)
    assert {r.column for r in results if r.status == "drift"} == drifted, name
    expected_by = {"constant"} if thresholds == "constant" else {"reference", "floor"}
    assert {r.threshold_by for r in results} <= expected_by
    assert all(r.to_dict()["threshold_by"] == r.threshold_by for r in results)


@settings(max_examples=examples(25), deadline=None)
@given(
    n=st.integers(100, 2000),
    chunks=st.integers(1, 12),
    seed=st.integers(0, 2**16),
)
def test_chunks_partition_the_reference_on_its_edges(n: int, chunks: int, seed: int) -> None:
    frame = reference_frame(seed, n)
    specs = specs_for(list(frame.columns), frame, bins=16)
    whole = profile_frame(frame, specs)
    parts = chunk_profiles(frame, specs, chunks)
    assert len(parts) == chunks and sum(p.n_rows for p in parts) == n
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    for col in specs:
        assert np.array_equal(merged.get(col).counts, whole.get(col).counts)


@settings(max_examples=examples(20), deadline=None)
@given(n=st.integers(300, 3000), seed=st.integers(0, 2**16))
def test_a_perfectly_stable_reference_gives_floor_bounds(n: int, seed: int) -> None:
    # Every chunk identical to the whole: zero spread, so every bound is the floor.
    frame = reference_frame(seed, n)
    whole = profile_frame(frame, specs_for(list(frame.columns), frame, bins=16))
    variability = reference_variability(whole, [whole] * 5)
    assert variability.spreads
    strategy = ReferenceThresholds(variability)
    for (column, method), spread in variability.spreads.items():
        assert spread.mean == pytest.approx(0.0, abs=1e-12) and spread.std == pytest.approx(0.0)
        d = get_detector(method)
        assert strategy.bound(d, column) == Bound(0.5 * d.default_threshold, "floor")


def test_too_few_usable_chunks_store_no_spread() -> None:
    frame = reference_frame(3, 200)
    specs = specs_for(list(frame.columns), frame, bins=8)
    whole = profile_frame(frame, specs)
    # 10 chunks of 20 rows: under MIN_N each, so nothing is summarised (constant fallback)
    assert profile_variability(frame, specs, whole, chunks=10).spreads == {}
    assert len(profile_variability(frame, specs, whole, chunks=3).spreads) > 0


def test_variability_round_trips_through_json(
    reference: tuple[pd.DataFrame, ProfileSet, Variability],
) -> None:
    _, _, variability = reference
    back = Variability.from_dict(json.loads(json.dumps(variability.to_dict())))
    assert back == variability


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: threshold_strategy("sigma"), RegistryError, "valid: constant, reference"),
        (lambda: ReferenceThresholds(None, k=-1), InputError, "k must be"),
        (lambda: ReferenceThresholds(None, floor_fraction=float("nan")), InputError, "floor"),
        (lambda: Variability.from_dict({"chunks": 3}), InputError, "malformed"),
        (lambda: chunk_profiles(reference_frame(1, 50), {}, 0), InputError, "at least 1"),
    ],
)
def test_bad_settings_raise_named_errors(call: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()  # type: ignore[operator]
