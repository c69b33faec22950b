"""The burst's batched paths equal the one-at-a-time paths they replace (issue 14).

- `merge_profiles` / `ProfileSet.merged` (a day merged from its windows at once) equal folding
  `merge` over the same profiles, to the last bit;
- `profiles_from_bytes` (a batch's payloads decoded stacked per spec) equals `profile_from_bytes`
  of each, bit for bit, and fails the same way on a corrupt payload;
- `evaluate`'s shortcut for `insufficient_data` comparisons gives the result `compare` gives;
- the outcome bootstrap's two ways of drawing a summary's cells are one distribution, and the
  intervals stay calibrated.
"""

from __future__ import annotations

from functools import reduce

import numpy as np
import pandas as pd
import pytest

from monitor.detectors import evaluate, get_detector
from monitor.detectors.compare import compare
from monitor.errors import ConflictError, CorruptProfileError
from monitor.outcomes import from_summary
from monitor.outcomes.from_summary import evaluate_summaries
from monitor.outcomes.summary import ClassificationSummary
from monitor.profiles import (
    NumericProfile,
    Profile,
    ProfileSet,
    key_of,
    merge_profiles,
    profile_frame,
    profile_from_bytes,
    profiles_from_bytes,
    slice_key,
    spec_from_reference,
)

RNG = np.random.default_rng(14)
NUM = spec_from_reference("x", RNG.lognormal(size=2000))
CAT = spec_from_reference(
    "c", RNG.choice(list("abcdefg"), size=2000).astype(object), kind="categorical"
)


def _numeric(size: int, nulls: int = 0, scale: float = 1.0) -> Profile:
    values = np.concatenate([RNG.lognormal(size=size) * scale, np.full(nulls, np.nan)])
    return NUM.profile(values)


def _same(a: Profile, b: Profile) -> None:
    assert type(a) is type(b)
    assert a.counts.tolist() == b.counts.tolist()
    assert a.null_count == b.null_count
    if isinstance(a, NumericProfile):
        assert isinstance(b, NumericProfile)
        assert a.sums.tobytes() == b.sums.tobytes()  # bit for bit
        assert (a.minimum, a.maximum, a.mean, a.m2) == (b.minimum, b.maximum, b.mean, b.m2)


@pytest.mark.parametrize(
    "sizes",
    [[0], [1], [0, 0], [0, 5, 0], [1, 1, 1], [40, 0, 3, 1000, 7], [25] * 24],
)
def test_merge_profiles_equals_folding_merge(sizes: list[int]) -> None:
    profiles = [_numeric(n, nulls=i % 3, scale=10.0**i) for i, n in enumerate(sizes)]
    _same(merge_profiles(profiles), reduce(lambda a, b: a.merge(b), profiles))  # type: ignore[arg-type]
    cats = [CAT.profile(RNG.choice(list("abcxyz"), size=n).astype(object)) for n in sizes]
    _same(merge_profiles(cats), reduce(lambda a, b: a.merge(b), cats))  # type: ignore[arg-type]


def test_merge_profiles_all_null_and_other_specs() -> None:
    nulls = [NUM.profile(np.array([np.nan, np.inf, -np.inf])) for _ in range(3)]
    merged = merge_profiles(nulls)
    assert merged.n == 0 and merged.null_count == 9
    _same(merged, reduce(lambda a, b: a.merge(b), nulls))  # type: ignore[arg-type]
    other = spec_from_reference("x", RNG.normal(size=500)).profile(RNG.normal(size=10))
    with pytest.raises(ConflictError, match="different specs"):
        merge_profiles([_numeric(5), other])
    with pytest.raises(ConflictError):
        merge_profiles([_numeric(5), CAT.profile(np.array(["a"], dtype=object))])


def _window(size: int, seed: int) -> ProfileSet:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "x": rng.lognormal(size=size),
            "c": rng.choice(list("abcxyz"), size=size).astype(object),
            "region": rng.choice(["r0", "r1", "r2"], size=size).astype(object),
        }
    )
    return profile_frame(frame, {"x": NUM, "c": CAT}, ["region"])


def test_profile_sets_merged_equals_folding_merge() -> None:
    sets = [_window(n, seed) for seed, n in enumerate([0, 1, 30, 200, 5])]
    one, folded = ProfileSet.merged(sets), reduce(lambda a, b: a.merge(b), sets)
    assert list(one.profiles) == list(folded.profiles)
    assert dict(one.rows) == dict(folded.rows) and list(one.specs) == list(folded.specs)
    for key in folded.profiles:
        _same(one.profiles[key], folded.profiles[key])
    with pytest.raises(ConflictError, match="sliced by"):
        ProfileSet.merged([sets[0], ProfileSet(dict(sets[0].profiles), dict(sets[0].rows))])


def _payloads() -> list[bytes]:
    """Windows of 0, 1, 2 and 50 rows (slices of 0 to ~20 rows), an all-null profile of each
    kind, mixed-scale values and both kinds, interleaved as a window's rows are."""
    sets = [_window(n, seed) for seed, n in enumerate([0, 1, 2, 50])]
    extra = [
        _numeric(0, nulls=3),
        CAT.profile(np.array([None, None], dtype=object)),
        _numeric(40, scale=1e12),
        _numeric(1),
        NUM.empty(),
        CAT.empty(),
    ]
    profiles = [p for one in sets for p in one.profiles.values()] + extra
    return [p.to_bytes() for p in profiles]


def test_stacked_decoding_equals_one_by_one() -> None:
    payloads = _payloads()
    stacked = profiles_from_bytes(payloads, lambda i: f"window {i}")
    assert len(stacked) == len(payloads)
    for payload, got in zip(payloads, stacked, strict=True):
        alone = profile_from_bytes(payload)
        _same(got, alone)
        assert got.spec is alone.spec and got.n == alone.n and got.counts.dtype == np.int64
    assert profiles_from_bytes([], lambda i: "none") == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b"XXXX" + b[4:],  # not a profile
        lambda b: b[:-8],  # short
        lambda b: b[:-8] + np.array([-1], dtype="<i8").tobytes(),  # a negative count
    ],
)
def test_stacked_decoding_fails_like_one_by_one(damage: object) -> None:
    """One corrupt payload among valid ones: the same CorruptProfileError as decoding it alone,
    named by its `where`."""
    payloads = [p for p in _payloads() if profile_from_bytes(p).kind == "categorical"]
    bad = damage(payloads[3])  # type: ignore[operator]
    payloads[3] = bad
    with pytest.raises(CorruptProfileError) as alone:
        profile_from_bytes(bad, "window 3")
    with pytest.raises(CorruptProfileError) as stacked:
        profiles_from_bytes(payloads, lambda i: f"window {i}")
    assert str(stacked.value) == str(alone.value) and "window 3" in str(alone.value)


def test_stacked_decoding_non_finite_sums() -> None:
    payloads = [p for p in _payloads() if profile_from_bytes(p).kind == "numeric"]
    bad = payloads[5][:-8] + np.array([np.inf], dtype="<f8").tobytes()
    payloads[5] = bad
    with pytest.raises(CorruptProfileError, match="window 5.*non-finite bin sums"):
        profiles_from_bytes(payloads, lambda i: f"window {i}")


@pytest.mark.parametrize("min_n", [1, 2, 30, 31, 60, 10**6])  # config: min_n >= 1
def test_evaluate_insufficient_shortcut_equals_compare(min_n: int) -> None:
    """Slices of 0, 1, ~30 and more rows, a slice only one side has, at thresholds around the
    sizes: every result equals `compare` on the same pair."""
    reference = _window(3000, 1)
    current = _window(95, 2)  # ~30 rows per region
    rows = dict(current.rows)
    r9 = slice_key("region", "r9")
    rows[r9] = 1  # a slice the reference lacks, of one row
    profiles = dict(current.profiles)
    profiles[(r9, "x")] = NUM.profile(np.array([1.0]))
    profiles[(r9, "c")] = CAT.profile(np.array(["a"], dtype=object))
    current = ProfileSet(profiles, rows, current.slice_by, dict(current.specs))
    results = evaluate(reference, current, methods=["psi", "jensen_shannon"], min_n=min_n,
                       alpha=1.0)  # fmt: skip
    assert {r.status for r in results} >= ({"insufficient_data"} if min_n > 1 else set())
    for r in results:
        if r.method == "schema" or r.column == "region":  # region: from the slice counts
            continue
        key = key_of(r.slice)
        spec = reference.specs[r.column]
        ref = reference.profiles.get((key, r.column)) or spec.empty()
        cur = current.profiles.get((key, r.column)) or spec.empty()
        alone = compare(get_detector(r.method), ref, cur, r.threshold, r.slice, min_n)
        if alone.status == "insufficient_data":
            assert r == alone
        else:
            assert (r.value, r.n_reference, r.n_current) == (
                alone.value,
                alone.n_reference,
                alone.n_current,
            )


def _summary(rng: np.random.Generator, n: int) -> ClassificationSummary:
    s = ClassificationSummary(0.5)
    y = (rng.random(n) < 0.4).astype(np.float64)
    s.add(y, np.clip(rng.normal(0.4 + 0.25 * y, 0.2), 0.0, 1.0))
    return s


def _intervals(summaries: list[ClassificationSummary]) -> np.ndarray:
    found = evaluate_summaries([(None, s) for s in summaries], metrics=BOOTSTRAPPED)
    return np.array([[r.ci_low, r.ci_high] for r in found], dtype=np.float64).reshape(
        len(summaries), len(BOOTSTRAPPED), 2
    )


BOOTSTRAPPED = ("f1", "roc_auc", "log_loss", "ece")


def test_outcome_draws_by_picks_match_draws_by_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """A summary's cells resampled by n uniform picks (few pairs per cell) or by a multinomial
    per cell are one distribution: over 40 summaries the interval bounds agree on average
    within a tenth of the intervals' width (one summary's bounds differ by Monte Carlo error)."""
    rng = np.random.default_rng(1)
    summaries = [_summary(rng, int(n)) for n in rng.integers(40, 400, size=40)]
    monkeypatch.setattr(from_summary, "_PICKS", 10**9)
    picks = _intervals(summaries)
    monkeypatch.setattr(from_summary, "_PICKS", 0)
    cells = _intervals(summaries)
    width = (cells[..., 1] - cells[..., 0]).mean(axis=0)
    assert (width > 0).all()
    for bound in (0, 1):
        shift = np.abs((picks[..., bound] - cells[..., bound]).mean(axis=0))
        assert (shift < 0.1 * width).all(), (bound, shift / width)


def test_roc_auc_interval_covers_the_truth() -> None:
    """Calibration: in 200 windows of 300 pairs from one population, the 95% ROC-AUC
    interval covers the population's ROC-AUC 90-99% of the time."""
    rng = np.random.default_rng(2)
    population = _summary(rng, 400_000)
    truth = evaluate_summaries([(None, population)], metrics=["roc_auc"])[0].value
    assert truth is not None
    found = [evaluate_summaries([(None, _summary(rng, 300))], metrics=["roc_auc"])[0]
             for _ in range(200)]  # fmt: skip
    covered = np.mean([r.ci_low <= truth <= r.ci_high for r in found])  # type: ignore[operator]
    assert 0.90 <= covered <= 0.99, covered
