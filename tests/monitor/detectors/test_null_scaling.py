"""The bootstrap null is drawn once per reference and rescaled to each window's size.

Claims: rescaled draws have the quantiles of draws made at the exact size (within the Monte
Carlo error), a window of any size in the large-count regime reuses one set of draws, sizes
in between share draws on a 2% grid, small windows are drawn at their own size, and p-values
over windows of varying size stay calibrated under no drift.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from monitor.detectors import Detector, NullScaling, Pair, compare, get_detector
from monitor.detectors._null import GRID_MIN, GRID_RATIO, _between, _cache, draw_plan, null_draws
from monitor.profiles import ProfileSet, profile_frame, specs_for

SCALED = ["wasserstein", "l_infinity", "hellinger", "psi", "jensen_shannon"]
N_REF = 20_000
DRAWS = 10_000


def shapes(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "lognormal": rng.lognormal(0.0, 1.5, N_REF),
        "ties": rng.choice([0, 0, 0, 1, 2, 3, 5, 8, 13, 21, 34, 55], N_REF).astype(float),
        "zeros_and_tail": np.where(rng.random(N_REF) < 0.7, 0.0, rng.exponential(3.0, N_REF)),
    }


def reference(x: np.ndarray) -> tuple[ProfileSet, pd.DataFrame]:
    frame = pd.DataFrame({"x": x})
    return profile_frame(frame, specs_for(["x"], frame, top_k=100), []), frame


def window(ref: ProfileSet, frame: pd.DataFrame, n: int, seed: int) -> Pair:
    cur = profile_frame(frame.sample(n, replace=True, random_state=seed), ref.specs, [])
    return Pair(ref.get("x"), cur.get("x"))


def exact_draws(detector: Detector, pair: Pair, n_cur: int, seed: int) -> np.ndarray:
    """The null drawn directly at (n_ref, n_cur): what rescaling must reproduce."""
    rng = np.random.default_rng(seed)
    counts = detector.buckets(pair.reference)
    p = counts / counts.sum()
    r = rng.multinomial(int(counts.sum()), p, size=DRAWS).astype(float)
    c = rng.multinomial(n_cur, p, size=DRAWS).astype(float)
    return np.asarray(detector.statistic(r, c, pair))


def off_grid(size: int) -> int:
    """A size near `size` half a grid step from its grid point (the largest rescaling)."""
    step = math.log(GRID_RATIO)
    return int(math.exp((round(math.log(size) / step) + 0.49) * step))


def boundary(detector: Detector, pair: Pair) -> int:
    """The smallest current size whose sparsest bucket expects `min_expected` rows."""
    assert detector.null_scaling is not None
    counts = detector.buckets(pair.reference)
    sparsest = float(counts[counts > 0].min() / counts.sum())
    return max(math.ceil(detector.null_scaling.min_expected / sparsest - 1e-9), GRID_MIN)


@pytest.mark.parametrize("name", SCALED)
@pytest.mark.parametrize("shape", ["lognormal", "ties", "zeros_and_tail"])
def test_rescaled_null_has_the_quantiles_of_the_exact_one(name: str, shape: str) -> None:
    detector = get_detector(name)
    ref, frame = reference(shapes(np.random.default_rng(1))[shape])
    probe = window(ref, frame, 500, seed=2)
    edge = boundary(detector, probe)
    if edge > N_REF:
        pytest.skip(f"{shape}: the sparsest bucket needs more rows than the reference has")
    # At the regime's edge (anchor draws rescaled), below it as far from a grid point as a
    # size can be (grid draws rescaled), and far above it.
    for n in sorted(
        {edge, off_grid(max(GRID_MIN, edge // 2)), off_grid(70), off_grid(34), 3 * edge + 11}
    ):
        pair = window(ref, frame, n, seed=n)
        scaled = null_draws(detector, pair, draws=DRAWS)
        exact = exact_draws(detector, pair, n, seed=n)
        for q in (0.5, 0.95, 0.99):
            ratio = np.quantile(scaled, q) / np.quantile(exact, q)
            # 10,000 draws: the 99th percentile of either side is within ~2% of its true value.
            assert abs(ratio - 1) < 0.06, (name, shape, n, q, ratio)


def test_windows_of_any_large_size_reuse_one_set_of_draws() -> None:
    detector = get_detector("wasserstein")
    ref, frame = reference(np.random.default_rng(3).normal(0.0, 1.0, N_REF))
    sizes = np.random.default_rng(4).integers(2_000, 200_000, 40)
    plans = {draw_plan(detector, detector.buckets(ref.get("x")), int(n))[0] for n in sizes}
    assert plans == {N_REF}  # every size is drawn at the reference's own size
    _cache.clear()
    for i, n in enumerate(sizes[:10]):
        null_draws(detector, window(ref, frame, int(n), seed=i))
    assert len(_cache) == 1


def probe(scaling: NullScaling | None) -> Detector:
    """An unregistered detector with L∞'s statistic and the given scaling."""
    return Detector(
        name="probe",
        kinds=frozenset({"numeric"}),
        default_threshold=0.1,
        statistic=get_detector("l_infinity").statistic,
        description="",
        null_scaling=scaling,
    )


def test_the_regime_starts_exactly_at_min_expected_rows() -> None:
    custom = probe(NullScaling(power=1, min_expected=50.0))
    counts = np.array([8_000.0, 2_000.0, 0.0])  # sparsest occupied bucket: 20%
    anchored = math.sqrt((1 / 10_000 + 1 / 250) / (2 / 10_000))  # drawn at n_cur = n_ref
    n_draw, factor = draw_plan(custom, counts, 250)
    assert n_draw == 10_000 and factor == pytest.approx(anchored)
    n_draw, factor = draw_plan(custom, counts, 249)  # 49.8 expected rows: the grid
    assert n_draw != 10_000 and abs(n_draw / 249 - 1) <= GRID_RATIO - 1
    expected = math.sqrt((1 / 10_000 + 1 / 249) / (1 / 10_000 + 1 / n_draw))
    assert factor == pytest.approx(expected)


@pytest.mark.parametrize("n", [1, 10, GRID_MIN - 1])
def test_small_windows_are_drawn_at_their_own_size(n: int) -> None:
    counts = np.full(10, 2_000.0)
    for name in SCALED:
        assert draw_plan(get_detector(name), counts, n) == (n, 1.0)


def test_a_detector_without_scaling_is_drawn_at_every_size() -> None:
    plain = probe(None)
    counts = np.full(10, 2_000.0)
    assert draw_plan(plain, counts, 5_000) == (5_000, 1.0)
    assert draw_plan(plain, counts, 5_001) == (5_001, 1.0)


def test_grid_neighbours_share_draws() -> None:
    detector = get_detector("psi")
    counts = np.r_[np.full(60, 300.0), [20.0]]  # sparse last bucket: the grid up to 50 / p
    drawn = {draw_plan(detector, counts, n)[0] for n in range(5_000, 5_050)}
    assert 1 <= len(drawn) <= 2  # 1% of sizes around 5,000: at most one grid step
    far = off_grid(5_000)
    n_draw, _ = draw_plan(detector, counts, far)
    assert n_draw < far and far / n_draw < math.sqrt(GRID_RATIO)


@pytest.mark.parametrize("name", ["wasserstein", "psi"])
def test_p_values_over_windows_of_varying_size_stay_calibrated(name: str) -> None:
    """Under no drift, P(p < 0.05) is 5% over references and windows drawn afresh.

    (For one fixed reference it is not, nor should it be: the reference's own sampling error
    is a fixed offset then, and the bootstrap accounts for it on average over references.)
    """
    rng = np.random.default_rng(7)
    detector = get_detector(name)
    p_values = []
    for _ in range(200):
        ref, _ = reference(rng.normal(0.0, 1.0, 5_000))
        fresh = pd.DataFrame({"x": rng.normal(0.0, 1.0, int(rng.integers(300, 6_000)))})
        current = profile_frame(fresh, ref.specs, []).get("x")
        result = compare(detector, ref.get("x"), current, threshold=0.0)
        assert result.p_value is not None
        p_values.append(result.p_value)
    p = np.array(p_values)
    # 5% expected below 0.05 (binomial sd 1.5%), a median near 0.5.
    assert 0.01 <= float((p < 0.05).mean()) <= 0.10
    assert 0.38 <= float(np.median(p)) <= 0.62


def test_bootstrap_p_value_falls_continuously_between_draws_and_never_below_the_tail_share() -> (
    None
):
    # Windows of one reference between the same two draws no longer tie (ties cost power at a
    # matched false-alarm rate), and the p-value stays at or above the tail share (valid).
    draws = np.array([0.1, 0.2, 0.2, 0.3, 0.4])
    assert _between(draws, 0.25) == pytest.approx(0.5)
    assert _between(draws, 0.3) == 0.0 and _between(draws, 0.05) == 0.0
    assert _between(draws, 0.5) == 0.0  # beyond every draw: the tail share (and gamma) stand
    values = np.linspace(0.0, 0.5, 501)
    exceed = np.array([(draws >= v - 1e-12).sum() for v in values])
    p = (1 + exceed + np.array([_between(draws, v) for v in values])) / (draws.size + 1)
    assert (np.diff(p) <= 1e-12).all() and (p >= (1 + exceed) / (draws.size + 1)).all()
    inner = (values > 0.1) & (values < 0.4)
    assert (np.diff(p[inner]) < 0).all()  # strictly falling between the first and last draw
