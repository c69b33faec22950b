"""The per-event path of the reconstruction error, numpy only: precomputed category→share
lookups and one matrix that standardises, projects and reconstructs at once.

For standardised rows z = (x - mean) / scale and orthonormal kept components V (rows), the
residual z - z·VᵀV equals x·M - b with M = diag(1/scale)·(I - VᵀV) and b = (mean/scale)·(I - VᵀV),
so a batch's errors are the row norms of one matmul.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from monitor.errors import InputError
from monitor.estimation._calibration import Array


@dataclass(frozen=True)
class ShareLookup:
    """A categorical column's reference categories (a hash index, built once) and their shares;
    position len(categories) holds 0.0, the share of an unseen category."""

    index: Any  # pandas.Index of the category strings
    shares: Array
    missing: float  # the share of the imputed value

    @classmethod
    def build(cls, shares: Sequence[tuple[str, float]], fill: Any) -> ShareLookup:
        import pandas as pd

        table = dict(shares)
        index = pd.Index([k for k, _ in shares], dtype=object)
        values = np.array([v for _, v in shares] + [0.0], dtype=np.float64)
        return cls(index, values, table.get(str(fill), 0.0))

    def encode(self, values: Array) -> Array:
        """Each value's share: strings by hash lookup; missing values the imputed value's share;
        anything else (bools, numbers) by its str() form, as the reference was counted."""
        pos = self.index.get_indexer(values)
        miss = np.flatnonzero(pos < 0)
        if miss.size:
            pos[miss] = self._slow(values[miss])
        out = self.shares[pos]
        if miss.size:
            absent = _is_missing(values[miss])
            out[miss[absent]] = self.missing
        return np.asarray(out, dtype=np.float64)

    def _slow(self, values: Array) -> Array:
        as_text = np.array([str(v) for v in values], dtype=object)
        pos = self.index.get_indexer(as_text)
        pos[pos < 0] = self.shares.size - 1
        return np.asarray(pos)


@dataclass(frozen=True)
class Scorer:
    """Encodes column arrays and returns each row's reconstruction error."""

    columns: tuple[str, ...]
    lookups: tuple[ShareLookup | None, ...]  # None: a numeric column
    fill: Array  # numeric fill per column (unused for categorical ones)
    matrix: Array  # d × d
    offset: Array  # d

    def encode(self, arrays: Mapping[str, Any], n: int) -> Array:
        """The n × d encoded matrix (before standardisation) of `arrays` (column → n values)."""
        out = np.empty((n, len(self.columns)), dtype=np.float64)
        for j, (col, lookup) in enumerate(zip(self.columns, self.lookups, strict=True)):
            if col not in arrays:
                raise InputError(f"column '{col}' not found (a multivariate feature)")
            values = arrays[col]
            if lookup is not None:
                out[:, j] = lookup.encode(np.asarray(values, dtype=object))
            else:
                out[:, j] = np.asarray(values, dtype=np.float64)
        bad = ~np.isfinite(out)  # categorical columns are finite shares: only numbers are filled
        if bad.any():
            rows, cols = np.nonzero(bad)
            out[rows, cols] = self.fill[cols]
        return out

    def errors(self, arrays: Mapping[str, Any], n: int) -> Array:
        """Each row's distance from its reconstruction.

        The n × d by d × d product is an einsum, not `@`: with d ~ 20 a threaded BLAS gains
        nothing and, on a busy machine, its threads waiting for cores cost 2-5x (bench/README.md).
        """
        residual = np.einsum("ij,jk->ik", self.encode(arrays, n), self.matrix)
        residual -= self.offset
        return np.asarray(np.sqrt(np.einsum("ij,ij->i", residual, residual)), dtype=np.float64)


def build_scorer(
    columns: Sequence[str], lookups: Sequence[ShareLookup | None], fill: Sequence[Any],
    mean: Sequence[float], scale: Sequence[float], components: Sequence[Sequence[float]],
) -> Scorer:  # fmt: skip
    """The combined matrix and offset from a fitted model's standardisation and components."""
    d = len(columns)
    v = np.asarray(components, dtype=np.float64).reshape(-1, d)
    keep = np.eye(d) - v.T @ v
    inv = 1.0 / np.asarray(scale, dtype=np.float64) if d and len(scale) else np.ones(d)
    centre = np.asarray(mean, dtype=np.float64) if len(mean) else np.zeros(d)
    numeric = np.array(
        [0.0 if lk is not None else float(f) for lk, f in zip(lookups, fill, strict=True)]
    )
    return Scorer(tuple(columns), tuple(lookups), numeric, inv[:, None] * keep,
                  (centre * inv) @ keep)  # fmt: skip


def _is_missing(values: Array) -> Array:
    import pandas as pd

    return np.asarray(pd.isna(values), dtype=bool)
