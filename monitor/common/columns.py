"""Columns without pandas: the record batches `monitor.data` reads and the profiles consume.

`DataSource.frames` (monitor.data.datasets) turns each Arrow record batch into a `Columns`:
numbers as numpy arrays, text and booleans with nulls as `Coded` columns (codes into the
distinct values, as Arrow's dictionary encoding gives them), every other type as the pandas
Series ``to_pandas`` makes of it (pandas then loads, for that column only). The values are the
ones ``RecordBatch.to_pandas()`` gives: integers with nulls become float64 with NaN, text nulls
are nulls, so profiles, specs and reports are the same as through pandas, bit for bit.

`factorize`, `n_unique` and `n_present` answer for any column: a `Coded` one, a numpy array, or
(through pandas, imported then) a pandas Series or object array. `modelwatch drift` on numbers
and text thus never imports pandas (~0.3 s).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Coded", "Columns", "factorize", "n_present", "n_unique"]

_NUMBERS = "biuf"


class Coded:
    """A categorical column as codes into its distinct values (-1: null), like a pandas
    Categorical: what Arrow's dictionary encoding gives for a text column.

    ``dense`` says every value is used and values are numbered by first appearance, as
    ``pandas.factorize`` numbers them; slices and folds are not dense until `factorize`d.
    ``text``: every value is a str (what a text column holds).
    """

    dtype = np.dtype(object)
    ndim = 1

    def __init__(
        self, codes: NDArray[np.intp], values: Sequence[Any], dense: bool, text: bool = False
    ) -> None:
        self.codes = codes
        self.values = values
        self.dense = dense
        self.text = text

    def __len__(self) -> int:
        return int(self.codes.size)

    def __getitem__(self, rows: slice) -> Coded:
        if rows.indices(len(self)) == (0, len(self), 1):
            return self
        return Coded(self.codes[rows], self.values, False, self.text)

    def __array__(self, dtype: Any = None, copy: Any = None) -> NDArray[Any]:
        """The values as an object array, None for nulls (as pandas holds them)."""
        out = np.array([*self.values, None], dtype=object)[self.codes]
        return out if dtype is None else out.astype(dtype)


class Columns:
    """A record batch as named columns (the part of a pandas DataFrame the profiles use:
    ``columns``, ``[name]``, ``len``, ``iloc[a:b]`` and ``assign``)."""

    def __init__(self, data: Mapping[str, Any], rows: int) -> None:
        self._data = dict(data)
        self._rows = rows

    @property
    def columns(self) -> list[str]:
        return list(self._data)

    def __len__(self) -> int:
        return self._rows

    def __getitem__(self, name: str | list[str]) -> Any:
        """A column, or `Columns` of a list of them."""
        if isinstance(name, list):
            return Columns({c: self._data[c] for c in name}, self._rows)
        return self._data[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    @property
    def iloc(self) -> _Rows:
        """Row ranges: ``frame.iloc[a:b]``."""
        return _Rows(self)

    def assign(self, **columns: Any) -> Columns:
        """A copy with `columns` added or replaced."""
        return Columns({**self._data, **columns}, self._rows)


class _Rows:
    def __init__(self, frame: Columns) -> None:
        self._frame = frame

    def __getitem__(self, rows: slice) -> Columns:
        start, stop, _ = rows.indices(len(self._frame))
        data = {name: _rows(self._frame[name], rows) for name in self._frame}
        return Columns(data, max(stop - start, 0))


def _rows(values: Any, rows: slice) -> Any:
    iloc = getattr(values, "iloc", None)  # a pandas Series: by position, whatever its index
    return values[rows] if iloc is None else iloc[rows]


def factorize(values: Any, dense: bool = True) -> tuple[NDArray[np.intp], list[Any]]:
    """``pandas.factorize(values)``: codes (-1 for nulls) and the distinct non-null values in
    order of first appearance, for any column (pandas loads only for other column types).

    ``dense=False`` lets a `Coded` column keep values it does not use, in any order (enough to
    look each value up; renumbering costs a sort)."""
    if isinstance(values, Coded):
        if values.dense or not dense:
            return values.codes, list(values.values)
        return _first_appearance(values.codes, values.values)
    if isinstance(values, np.ndarray) and values.dtype.kind in _NUMBERS:
        return _factorize_numbers(values.reshape(-1))
    if isinstance(values, np.ndarray) and values.size == 0:
        return np.empty(0, dtype=np.intp), []
    import pandas as pd

    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.intp), list(np.asarray(uniques))


def n_present(values: Any) -> int:
    """Non-null values (None, NaN and NaT are null)."""
    if isinstance(values, Coded):
        return int(np.count_nonzero(values.codes >= 0))
    if isinstance(values, np.ndarray) and values.dtype.kind in _NUMBERS:
        return int(values.size - np.count_nonzero(_nan(values)))
    return len(values.dropna())


def n_unique(values: Any) -> int:
    """Distinct non-null values (pandas' ``nunique``)."""
    if isinstance(values, Coded | np.ndarray):
        return len(factorize(values)[1])
    return int(values.nunique())


def _nan(x: NDArray[Any]) -> NDArray[np.bool_]:
    return np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, dtype=bool)


def _factorize_numbers(x: NDArray[Any]) -> tuple[NDArray[np.intp], list[Any]]:
    present = ~_nan(x)
    uniques, first, inverse = np.unique(x[present], return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # pandas numbers values by first appearance
    rank = np.empty(order.size, dtype=np.intp)
    rank[order] = np.arange(order.size)
    codes = np.full(x.size, -1, dtype=np.intp)
    codes[present] = rank[inverse.reshape(-1)]
    return codes, list(uniques[order])


def _first_appearance(
    codes: NDArray[np.intp], values: Sequence[Any]
) -> tuple[NDArray[np.intp], list[Any]]:
    """Codes renumbered over the values they use, in order of first appearance."""
    valid = codes >= 0
    used, first = np.unique(codes[valid], return_index=True)
    order = used[np.argsort(first, kind="stable")]
    rank = np.full(len(values) + 1, -1, dtype=np.intp)
    rank[order] = np.arange(order.size)
    return rank[codes], [values[i] for i in order.tolist()]
