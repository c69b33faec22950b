"""Profiles: binning, nulls, merge laws, serialisation, dataset/slice profiling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.errors import ConflictError, InputError
from monitor.profiles import (
    CategoricalProfile,
    NumericProfile,
    Profile,
    ProfileSet,
    parse_slice_key,
    profile_frame,
    profile_from_bytes,
    slice_key,
    spec_from_reference,
    specs_for,
)
from tests.properties import examples

NUM_SPEC = spec_from_reference("x", np.linspace(-5, 5, 1001), bins=16)
CAT_SPEC = spec_from_reference("c", ["a"] * 200 + ["b"] * 40 + ["c"] * 3 + ["d"] * 2, top_k=2)

floats = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False), st.just(float("nan")), st.none(), st.just(float("inf"))
)
labels = st.one_of(st.sampled_from(["a", "b", "c", "d", "zz", "new"]), st.none())


def same(p: Profile, q: Profile) -> bool:
    """Counts exactly equal; float summaries equal up to rounding."""
    if p.spec != q.spec or p.null_count != q.null_count or not np.array_equal(p.counts, q.counts):
        return False
    if isinstance(p, CategoricalProfile):
        return True
    assert isinstance(q, NumericProfile)
    close = np.allclose(p.sums, q.sums, rtol=1e-9, atol=1e-6)
    stats = np.allclose([p.mean, p.m2], [q.mean, q.m2], rtol=1e-7, atol=1e-6)
    return bool(close and stats and p.minimum == q.minimum and p.maximum == q.maximum)


def test_numeric_buckets_under_over_and_nulls() -> None:
    p = NUM_SPEC.profile([-10.0, -5.0, 0.0, 5.0, 6.0, None, float("nan"), float("inf")])
    assert isinstance(p, NumericProfile)
    assert p.counts[0] == 1 and p.counts[-1] == 1  # -10 below min, 6 above max
    assert p.n == 5 and p.null_count == 3
    assert p.counts[1] == 1 and p.counts[-2] == 1  # min and max fall in the interior bins
    assert p.minimum == -10.0 and p.maximum == 6.0
    assert p.mean == pytest.approx(-0.8)
    assert p.sums.sum() == pytest.approx(-4.0)


def test_numeric_spec_has_requested_bins_and_dedupes_discrete() -> None:
    spec = spec_from_reference("x", np.random.default_rng(0).normal(size=5000))
    assert len(spec.edges) == 65 and spec.n_buckets == 66
    discrete = spec_from_reference("d", [1, 2, 3] * 100)
    # One bucket per distinct value: the top value is not merged into a closed [2, 3] bin.
    assert discrete.edges == (1.0, 2.0, 3.0, 3.0)
    assert discrete.profile([1, 2, 2, 3, 3, 3]).counts.tolist() == [0, 1, 2, 3, 0]
    constant = spec_from_reference("k", [7.0] * 10)
    assert constant.profile([6.0, 7.0, 8.0]).counts.tolist() == [1, 1, 1]


def test_categorical_top_k_other_unseen_null() -> None:
    p = CAT_SPEC.profile(["a", "b", "c", "d", "zz", None, float("nan"), "a"])
    assert isinstance(p, CategoricalProfile)
    assert CAT_SPEC.categories == ("a", "b")
    assert p.category_counts() == {"a": 2, "b": 1}
    assert p.other_count == 2 and p.unseen_count == 1 and p.null_count == 2 and p.n == 6


def test_kind_inference() -> None:
    assert spec_from_reference("n", [1, 2.5, None]).kind == "numeric"
    assert spec_from_reference("s", ["x", None]).kind == "categorical"
    assert spec_from_reference("b", np.array([True, False])).kind == "categorical"
    assert spec_from_reference("b", pd.Series([True, False])).kind == "categorical"
    p = spec_from_reference("b", [True, False, True]).profile([True, True])
    assert p.n == 2 and p.counts[0] == 2


def test_numeric_column_with_text_names_column() -> None:
    with pytest.raises(InputError, match="column 'x'"):
        NUM_SPEC.profile(["1.0", "abc"])


def test_merge_refuses_other_spec() -> None:
    other = spec_from_reference("x", np.arange(10.0))
    with pytest.raises(ConflictError, match="different specs"):
        NUM_SPEC.profile([1.0]).merge(other.profile([1.0]))  # type: ignore[arg-type]
    with pytest.raises(ConflictError):
        NUM_SPEC.empty().merge(CAT_SPEC.empty())  # type: ignore[arg-type]


def test_empty_profile_round_trips_and_is_merge_identity() -> None:
    for spec in (NUM_SPEC, CAT_SPEC):
        e = spec.empty()
        assert e.n == 0 and e.null_count == 0
        assert same(profile_from_bytes(e.to_bytes()), e)
    p = NUM_SPEC.profile([1.0, 2.0])
    assert same(p.merge(NUM_SPEC.empty()), p)  # type: ignore[arg-type]


def test_from_bytes_rejects_garbage() -> None:
    with pytest.raises(InputError, match="bad magic"):
        profile_from_bytes(b"hello world")
    good = NUM_SPEC.profile([1.0]).to_bytes()
    with pytest.raises(InputError, match="column 'x'"):
        profile_from_bytes(good[:-3])


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(floats, max_size=60), st.lists(floats, max_size=60))
def test_numeric_merge_equals_profile_of_concatenation(a: list[float], b: list[float]) -> None:
    merged = NUM_SPEC.profile(a).merge(NUM_SPEC.profile(b))  # type: ignore[arg-type]
    assert same(merged, NUM_SPEC.profile(a + b))
    assert same(merged, NUM_SPEC.profile(b).merge(NUM_SPEC.profile(a)))  # type: ignore[arg-type]


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(labels, max_size=40), st.lists(labels, max_size=40))
def test_categorical_merge_equals_profile_of_concatenation(a: list[str], b: list[str]) -> None:
    merged = CAT_SPEC.profile(a).merge(CAT_SPEC.profile(b))  # type: ignore[arg-type]
    assert same(merged, CAT_SPEC.profile(a + b))
    assert same(merged, CAT_SPEC.profile(b).merge(CAT_SPEC.profile(a)))  # type: ignore[arg-type]


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(floats, max_size=30), st.lists(floats, max_size=30), st.lists(floats, max_size=30))
def test_numeric_merge_is_associative(a: list[float], b: list[float], c: list[float]) -> None:
    pa, pb, pc = (NUM_SPEC.profile(v) for v in (a, b, c))
    left = pa.merge(pb).merge(pc)  # type: ignore[arg-type]
    right = pa.merge(pb.merge(pc))  # type: ignore[arg-type]
    assert same(left, right)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(floats, max_size=50), st.lists(labels, max_size=50))
def test_bytes_round_trip(nums: list[float], cats: list[str]) -> None:
    for p in (NUM_SPEC.profile(nums), CAT_SPEC.profile(cats)):
        back = profile_from_bytes(p.to_bytes())
        assert same(back, p)
        assert back.spec.fingerprint == p.spec.fingerprint


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = rng.normal(size=n)
    x[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame(
        {
            "x": x,
            "c": rng.choice(["a", "b", "c", None], size=n),
            "region": rng.choice(["eu", "us", None], size=n),
        }
    )


def test_profile_frame_overall_and_slices(rng: np.random.Generator) -> None:
    df = _frame(rng, 3000)
    specs = specs_for(["x", "c"], df)
    ps = profile_frame(df, specs, slice_by=["region"])
    eu = slice_key("region", "eu")
    assert eu == '{"region":"eu"}' and parse_slice_key(eu) == {"region": "eu"}
    assert ps.slice_keys == sorted([eu, slice_key("region", "us"), slice_key("region", "(null)")])
    assert sum(ps.rows[k] for k in ps.slice_keys) == ps.n_rows == 3000
    assert same(ps.get("x", eu), specs["x"].profile(df.loc[df.region == "eu", "x"].to_numpy()))
    assert same(ps.get("c", eu), specs["c"].profile(df.loc[df.region == "eu", "c"].to_numpy()))
    assert ps.get("x").n + ps.get("x").null_count == 3000


def test_profile_set_merge_equals_profile_of_concatenation(rng: np.random.Generator) -> None:
    df = _frame(rng, 2000)
    specs = specs_for(["x", "c"], df)
    whole = profile_frame(df, specs, slice_by=["region"])
    parts = profile_frame(df.iloc[:700], specs, ["region"]).merge(
        profile_frame(df.iloc[700:], specs, ["region"])
    )
    assert set(parts.profiles) == set(whole.profiles) and parts.rows == whole.rows
    assert all(same(parts.profiles[k], whole.profiles[k]) for k in whole)


def test_profile_frame_missing_column_is_named(rng: np.random.Generator) -> None:
    df = _frame(rng, 10)
    with pytest.raises(InputError, match="column 'nope'"):
        profile_frame(df, specs_for(["x"], df), slice_by=["nope"])


def test_slice_values_are_capped_into_other(rng: np.random.Generator) -> None:
    df = pd.DataFrame({"x": rng.normal(size=500), "shop": rng.integers(0, 20, size=500)})
    ps = profile_frame(df, specs_for(["x"], df), slice_by=["shop"], max_slice_values=5)
    assert len(ps.slice_keys) == 6 and slice_key("shop", "(other)") in ps.slice_keys
    assert sum(ps.rows[k] for k in ps.slice_keys) == 500


def test_profile_sets_with_other_slicing_refuse_to_merge(rng: np.random.Generator) -> None:
    df = _frame(rng, 50)
    specs = specs_for(["x"], df)
    a: ProfileSet = profile_frame(df, specs, ["region"])
    with pytest.raises(ConflictError, match="sliced by"):
        a.merge(profile_frame(df, specs))


huge = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e200, -1e200, 1e308, -1.7976931348623157e308, 5e-324]),
    st.none(),
)


def finite_summary(p: NumericProfile) -> bool:
    return bool(np.isfinite([p.mean, p.m2]).all() and np.isfinite(p.sums).all() and p.m2 >= 0)


@settings(max_examples=examples(80), deadline=None)
@given(st.lists(huge, max_size=40), st.lists(huge, max_size=40), st.lists(huge, max_size=40))
def test_merge_of_huge_and_non_finite_values_stays_finite_and_round_trips(
    a: list[float], b: list[float], c: list[float]
) -> None:
    parts = [NUM_SPEC.profile(v) for v in (a, b, c)]
    merged = parts[0].merge(parts[1]).merge(parts[2])  # type: ignore[arg-type]
    assert isinstance(merged, NumericProfile) and finite_summary(merged)
    again = profile_from_bytes(merged.to_bytes())
    assert isinstance(again, NumericProfile) and same(again, merged)
    whole = NUM_SPEC.profile(a + b + c)
    # Moments agree only up to rounding relative to the largest magnitude here; counts exactly.
    assert np.array_equal(merged.counts, whole.counts) and merged.null_count == whole.null_count


def test_huge_values_keep_true_bounds_and_count_non_finite_as_null() -> None:
    p = NUM_SPEC.profile([1e308, 1e308, -1.7976931348623157e308, 1.0, float("inf"), float("nan")])
    assert isinstance(p, NumericProfile) and finite_summary(p)
    assert (p.n, p.null_count) == (4, 2)
    assert (p.minimum, p.maximum) == (-1.7976931348623157e308, 1e308)
    assert p.counts[-1] == 2 and p.counts[0] == 1  # still binned by their true values


def _with_header(payload: bytes, **changes: object) -> bytes:
    import orjson

    size = int.from_bytes(payload[4:8], "little")
    header = {**orjson.loads(payload[8 : 8 + size]), **changes}
    head = orjson.dumps(header)
    return payload[:4] + len(head).to_bytes(4, "little") + head + payload[8 + size :]


@pytest.mark.parametrize(
    "change", [{"m2": None}, {"mean": None}, {"mean": "nan"}, {"null_count": -1}, {"minimum": None}]
)
def test_decoding_an_invalid_profile_names_where_and_column(change: dict[str, object]) -> None:
    from monitor.errors import CorruptProfileError

    bad = _with_header(NUM_SPEC.profile([1.0, 2.0]).to_bytes(), **change)
    with pytest.raises(CorruptProfileError, match="model 'm' window w column 'x'"):
        profile_from_bytes(bad, where="model 'm' window w")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (np.bool_(False), "false"),
        (3, "3"),
        (3.0, "3"),
        (np.int64(3), "3"),
        (np.float32(2.5), "2.5"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (1e300, "1e+300"),
        ("eu", "eu"),
        (None, None),
        (float("nan"), None),
        (pd.NA, None),
    ],
)
def test_one_text_per_slice_value(value: object, text: str | None) -> None:
    from monitor.profiles import slice_key, value_text

    assert value_text(value) == text
    expected = "(null)" if text is None else text
    assert slice_key("c", value) == '{"c":"' + expected + '"}'


def test_slice_keys_from_text_and_back() -> None:
    from monitor.profiles import slice_key_from_text, slice_label

    assert slice_key_from_text("overall") == ""
    assert slice_key_from_text('{"tier": 3.0, "is_new": true}') == '{"is_new":"true","tier":"3"}'
    assert slice_key_from_text("tier=3, is_new=true") == '{"is_new":"true","tier":"3"}'
    assert slice_label('{"is_new":"true","tier":"3"}') == "is_new=true,tier=3"
    assert parse_slice_key('{"tier":3}') == {"tier": "3"}  # keys written before one format
    for bad in ("{nope", '{"a":[1]}', "region", "=eu"):
        with pytest.raises(InputError, match="slice"):
            slice_key_from_text(bad)


def test_baseline_slices_of_bool_and_int_columns_use_the_one_format() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "b": [True, False, True, None], "t": [3] * 4})
    ps = profile_frame(frame, specs_for(["x"], frame), ["b", "t"])
    assert ps.slice_keys == ['{"b":"(null)"}', '{"b":"false"}', '{"b":"true"}', '{"t":"3"}']
