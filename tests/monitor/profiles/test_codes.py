"""Category buckets without pandas (`encode_categories`) are `encode_categorical`'s buckets.

`encode_categories` repeats `encode_categorical`'s lookup for columns it factorizes without
pandas (`Coded` text, numbers); this pins the two together for every bucket: a category, the
tail ("other"), unseen values (counted as other when the tail is incomplete) and nulls.
"""

from __future__ import annotations

import numpy as np
import pytest

from monitor.common.columns import Coded
from monitor.profiles import ColumnSpec
from monitor.profiles.categorical import encode_categorical
from monitor.profiles.codes import encode_categories

VALUES = ["a", "b", None, "tail", "new", "a", "b", "b", None, "other-tail"]


@pytest.mark.parametrize("complete", [True, False])
def test_coded_text_buckets_are_encode_categoricals(complete: bool) -> None:
    spec = ColumnSpec(
        "c", "categorical", categories=("b", "a"), tail=frozenset({"tail", "other-tail"}),
        tail_complete=complete,
    )  # fmt: skip
    names = sorted({v for v in VALUES if v is not None})
    codes = np.array([-1 if v is None else names.index(v) for v in VALUES], dtype=np.intp)
    coded = Coded(codes, names, dense=False, text=True)
    want = encode_categorical(spec, np.asarray(VALUES, dtype=object))
    np.testing.assert_array_equal(encode_categories(spec, coded), want)
    np.testing.assert_array_equal(encode_categories(spec, coded[3:]), want[3:])


def test_numbers_and_empty_columns_bucket_like_encode_categorical() -> None:
    spec = ColumnSpec("n", "categorical", categories=("1", "2.5"), tail=frozenset({"3"}))
    x = np.array([1.0, 2.5, np.nan, 3.0, 7.0, 1.0])
    np.testing.assert_array_equal(encode_categories(spec, x), encode_categorical(spec, x))
    ints = np.array([1, 3, 9])
    np.testing.assert_array_equal(encode_categories(spec, ints), encode_categorical(spec, ints))
    empty = np.empty(0, dtype=object)
    assert encode_categories(spec, empty).size == 0
