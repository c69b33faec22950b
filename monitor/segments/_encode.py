"""Each feature as small integer codes: categorical values as they are, numeric columns binned.

A numeric column is cut on quantile edges (its own, or the baseline's when given); missing and
non-finite values get a bin of their own, so every row has a code in every feature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.errors import InputError

MISSING = "missing"
OTHER = "other"


@dataclass(frozen=True)
class Encoded:
    """Codes (rows × features, small ints) and what each code of each feature means."""

    features: list[str]
    codes: NDArray[np.int64]
    labels: list[list[str]]  # labels[f][code]: the predicate's value, e.g. "[1, 2.5)" or "red"

    @property
    def cardinalities(self) -> list[int]:
        return [len(values) for values in self.labels]


def _numeric_labels(edges: NDArray[np.float64]) -> list[str]:
    bounds = [-np.inf, *edges.tolist(), np.inf]
    return [f"[{lo:.6g}, {hi:.6g})" for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def quantile_edges(values: NDArray[np.float64], bins: int) -> NDArray[np.float64]:
    """Distinct inner quantile edges of the finite values (none when there are none)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0 or bins < 2:
        return np.empty(0)
    return np.unique(np.quantile(finite, np.linspace(0, 1, bins + 1)[1:-1]))


def _encode_numeric(
    values: NDArray[np.float64], edges: NDArray[np.float64]
) -> tuple[Any, list[str]]:
    codes = np.searchsorted(edges, values, side="right").astype(np.int64)
    labels = _numeric_labels(edges)
    bad = ~np.isfinite(values)
    if bad.any():
        codes[bad] = len(labels)
        labels.append(MISSING)
    return codes, labels


def _encode_categorical(series: Any, max_values: int) -> tuple[Any, list[str]]:
    """Codes by frequency (most frequent first), `max_values` of them, the rest as "other"."""
    missing = series.isna().to_numpy()
    if series.dtype.kind in "iub":
        values: NDArray[Any] = series.to_numpy()
    else:
        values = series.astype(str).to_numpy(dtype=str)
    uniques, inverse, counts = np.unique(values[~missing], return_inverse=True, return_counts=True)
    order = np.argsort(-counts, kind="stable")[:max_values]
    remap = np.full(len(uniques), len(order), dtype=np.int64)
    remap[order] = np.arange(len(order))
    labels = [str(u) for u in uniques[order].tolist()]
    if len(uniques) > len(order):
        labels.append(OTHER)
    codes = np.empty(len(values), dtype=np.int64)
    codes[~missing] = remap[inverse.reshape(-1)]
    if missing.any():
        codes[missing] = len(labels)
        labels.append(MISSING)
    return codes, labels


def encode(
    frame: Any,
    features: Sequence[str],
    bins: int = 10,
    edges: Mapping[str, Sequence[float]] | None = None,
    max_values: int = 30,
) -> Encoded:
    """Encode `features` of a pandas frame; numeric ones on `edges[col]` when given."""
    codes = np.zeros((len(frame), len(features)), dtype=np.int64)
    labels: list[list[str]] = []
    for j, col in enumerate(features):
        series = frame[col]
        kind = series.dtype.kind
        few = kind in "iub" and series.nunique() <= bins  # a small integer code is a category
        if kind in "iuf" and not few:
            values = series.to_numpy(dtype=np.float64, na_value=np.nan)
            if edges is not None and col in edges:
                cut = np.unique(np.asarray(edges[col], dtype=np.float64))
                if not np.isfinite(cut).all():
                    raise InputError(f"baseline edges of feature '{col}' are not finite")
            else:
                cut = quantile_edges(values, bins)
            codes[:, j], names = _encode_numeric(values, cut)
        else:
            codes[:, j], names = _encode_categorical(series, max_values)
        labels.append(names)
    return Encoded(list(features), codes, labels)
