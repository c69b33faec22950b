"""`DataSource.frames` (numpy and Arrow, no pandas) gives what `DataSource.batches` (pandas) gives.

Claims: the same batches, and per column the same values as far as profiling can tell (kinds,
floats, category codes and labels, distinct and non-null counts) for every Arrow type a user
file holds; profiling a file through `frames` gives the same specs and the same profiles, bit
for bit, as profiling its pandas batches, with slices, folded slices and reference chunks.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from monitor.baselines.stream import profile_source
from monitor.common.columns import Coded, Columns, factorize, n_present, n_unique
from monitor.data.datasets import DataSource, open_source
from monitor.profiles.codes import label_codes
from monitor.profiles.numeric import as_float_array
from monitor.profiles.spec import infer_kind

N = 5_000


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    holes = rng.random(N) < 0.1
    words = np.array([f"w{i}" for i in rng.integers(0, 300, N)], dtype=object)
    words[holes] = None
    return pa.table({
        "f64": pa.array(np.where(holes, np.nan, rng.normal(size=N))),
        "f64_null": pa.array(rng.normal(size=N), mask=holes),
        "f32_null": pa.array(rng.normal(size=N).astype(np.float32), mask=holes),
        "i64": pa.array(rng.integers(-5, 5, N)),
        "i64_null": pa.array(rng.integers(0, 40, N), mask=holes),
        "u8": pa.array(rng.integers(0, 3, N).astype(np.uint8)),
        "id": pa.array(np.arange(N)),
        "text": pa.array(words),
        "text_id": pa.array([f"id{i}" for i in range(N)]),
        "large": pa.array(words, type=pa.large_string()),
        "flag": pa.array(rng.random(N) < 0.3),
        "flag_null": pa.array(rng.random(N) < 0.3, mask=holes),
        "day": pa.array([dt.date(2026, 1, 1 + int(i)) for i in rng.integers(0, 28, N)]),
        "cat": pa.array(words).dictionary_encode(),
        "nothing": pa.nulls(N),
    })  # fmt: skip


@pytest.fixture(params=["parquet", "csv", "csv.gz"])
def path(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    table = _table()
    if request.param == "parquet":
        out = tmp_path / "data.parquet"
        pq.write_table(table, out, row_group_size=1_700)
        return out
    out = tmp_path / f"data.{request.param}"
    table.drop_columns(["cat", "nothing"]).to_pandas().to_csv(out, index=False)  # gzip by name
    return out


def _pairs(source: DataSource, batch_rows: int) -> list[tuple[Any, Any]]:
    cols = list(source.columns)
    mine = list(source.frames(cols, batch_rows))
    theirs = list(source.batches(cols, batch_rows))
    assert [len(f) for f in mine] == [len(f) for f in theirs]
    return list(zip(mine, theirs, strict=True))


def test_frames_hold_the_values_pandas_batches_hold(path: Path) -> None:
    source = open_source(path)
    for mine, theirs in _pairs(source, 1_000):
        assert isinstance(mine, Columns) and mine.columns == list(theirs.columns)
        for col in theirs.columns:
            a, b = mine[col], theirs[col]
            assert infer_kind(col, a) == infer_kind(col, b), col
            assert (n_present(a), n_unique(a)) == (n_present(b), n_unique(b)), col
            codes, labels = label_codes(a)
            their_codes, their_labels = label_codes(b)
            assert labels == their_labels, col  # same labels, same first-appearance order
            np.testing.assert_array_equal(codes, their_codes, err_msg=col)
            if infer_kind(col, b) == "numeric":
                np.testing.assert_array_equal(as_float_array(col, a), as_float_array(col, b))


def test_empty_columns_have_the_kinds_of_the_data(path: Path) -> None:
    source = open_source(path)
    mine, theirs = source.empty_columns(source.columns), source.empty_frame(source.columns)
    assert len(mine) == 0
    for col in source.columns:
        assert infer_kind(col, mine[col]) == infer_kind(col, theirs[col]), col


def _profiled(source: DataSource, **how: Any) -> Any:
    return profile_source(source, ["f64", "i64_null", "text", "flag_null", "u8"], **how)


@pytest.mark.parametrize(
    "how",
    [{}, {"chunks": 3}, {"slice_by": ["text"]}, {"slice_by": ["u8", "flag"], "chunks": 2}],
)
def test_profiles_through_frames_equal_profiles_through_pandas(
    path: Path, how: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # "text" has ~300 values: as a slice column it folds past the 50 most frequent.
    mine = _profiled(open_source(path), batch_rows=1_000, **how)
    monkeypatch.setattr(DataSource, "frames", DataSource.batches)
    monkeypatch.setattr(DataSource, "empty_columns", DataSource.empty_frame)
    theirs = _profiled(open_source(path), batch_rows=1_000, **how)
    assert dict(mine.specs) == dict(theirs.specs)
    assert dict(mine.profiles.rows) == dict(theirs.profiles.rows)
    assert mine.profiles.profiles.keys() == theirs.profiles.profiles.keys()
    for key, profile in mine.profiles.profiles.items():
        assert profile.to_bytes() == theirs.profiles.profiles[key].to_bytes(), key


def test_factorize_renumbers_a_slice_by_first_appearance() -> None:
    coded = Coded(np.array([2, 0, -1, 2, 1, 0]), ["a", "b", "c"], dense=True, text=True)
    codes, values = factorize(coded[2:])
    assert values == ["c", "b", "a"] and codes.tolist() == [-1, 0, 1, 2]
    assert factorize(coded[2:], dense=False)[1] == ["a", "b", "c"]
    theirs = pd.factorize(pd.Series(np.asarray(coded[2:]), dtype=object))
    assert list(theirs[1]) == values and theirs[0].tolist() == codes.tolist()


def test_numbers_factorize_like_pandas() -> None:
    x = np.array([3.0, np.nan, -0.0, 3.0, 0.0, 1.5, np.nan])
    codes, values = factorize(x)
    their_codes, their_values = pd.factorize(x, use_na_sentinel=True)
    assert codes.tolist() == their_codes.tolist() and values == list(their_values)
    assert str(values[1]) == "-0.0"  # the first spelling seen, as pandas keeps it
