"""The first pass over data too large for memory: a bounded, mergeable summary specs come from.

A `SpecSketch` is fed record batches (or partitions, merged on a driver) and then hands the
ordinary spec builder (`spec_from_reference`) what it needs, so streamed and in-memory baselines
bin the same way:

* numeric columns: a bottom-k row sample (each row gets a random key; the ``capacity`` smallest
  keys are kept, which merges by keeping the smallest of both) plus the exact finite minimum and
  maximum and, for a column with at most ``DISTINCT_CAP`` distinct values, each of them. When
  every row fits in the sample, the edges equal the in-memory ones exactly; past
  it they are quantiles of a uniform sample of ``capacity`` rows, with exact outer edges.
* categorical and slice columns: exact counts while a column has at most ``limit`` distinct
  values; past ``2 × limit`` the counts are pruned to the ``limit`` largest (a heavy-hitters
  summary: the top K stays right unless the tail is nearly as frequent; the spec's tail is then
  marked incomplete).

Memory is bounded by ``capacity`` rows of the numeric columns and ``2 × limit`` labels per
categorical column, whatever the number of rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.common.columns import factorize
from monitor.errors import InputError
from monitor.profiles._binning import Kind
from monitor.profiles._parallel import map_columns
from monitor.profiles.codes import label_codes
from monitor.profiles.numeric import as_float_array
from monitor.profiles.slicekeys import NULL_VALUE
from monitor.profiles.spec import (
    DEFAULT_BINS,
    DEFAULT_TOP_K,
    MAX_TAIL,
    QUANTILE_SAMPLE,
    ColumnSpec,
    categorical_spec_from_counts,
    infer_kind,
    spec_from_reference,
)

# Slots are left for the exact minimum and maximum and up to DISTINCT_CAP distinct values, so the
# spec builder gets at most QUANTILE_SAMPLE values and does not subsample the sample again.
# Numeric columns with at most this many distinct values pass each of them to the spec builder.
DISTINCT_CAP = 1024
SAMPLE_CAPACITY = QUANTILE_SAMPLE - 2 - DISTINCT_CAP


@dataclass
class BoundedCounts:
    """Counts per label, pruned to the ``limit`` largest once past ``2 × limit`` labels."""

    limit: int
    counts: dict[str, int] = field(default_factory=dict)
    pruned: bool = False

    def add(self, labels: Sequence[str], counts: Sequence[int]) -> None:
        for label, n in zip(labels, counts, strict=True):
            self.counts[label] = self.counts.get(label, 0) + int(n)
        if len(self.counts) > 2 * self.limit:
            ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
            self.counts = dict(ranked[: self.limit])
            self.pruned = True

    def merge(self, other: BoundedCounts) -> None:
        self.pruned = self.pruned or other.pruned
        self.add(list(other.counts), list(other.counts.values()))

    def top(self, k: int) -> list[str]:
        """The ``k`` most frequent labels, ties broken by label."""
        return [lab for lab, _ in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


@dataclass
class SpecSketch:
    """Mergeable first-pass summary of a dataset's columns (see the module docstring)."""

    kinds: Mapping[str, Kind]
    slice_by: tuple[str, ...] = ()
    capacity: int = SAMPLE_CAPACITY
    limit: int = DEFAULT_TOP_K + MAX_TAIL
    seed: int = 0
    rows: int = 0
    keys: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    sample: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Finite distinct values per numeric column while there are at most DISTINCT_CAP (else None).
    distinct: dict[str, frozenset[float] | None] = field(default_factory=dict)
    counts: dict[str, BoundedCounts] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)
        for col, kind in self.kinds.items():
            if kind == "numeric":
                self.sample[col] = np.empty(0)
                self.distinct[col] = frozenset()
            else:
                self.counts[col] = BoundedCounts(self.limit)
        for col in self.slice_by:
            self.counts[f"slice:{col}"] = BoundedCounts(self.limit)

    def add(self, frame: Any) -> None:
        """Summarise one batch (a pandas DataFrame or `Columns` of every sketched column)."""
        n = len(frame)
        if n == 0:
            return
        self.rows += n
        numeric = [c for c, k in self.kinds.items() if k == "numeric"]
        values = {c: as_float_array(c, frame[c]) for c in numeric}
        for col, x in values.items():
            self._widen(col, x)
            self._count_distinct(col, x)
        if numeric:
            self._sample(self._rng.random(n), values)
        for col, kind in self.kinds.items():
            if kind != "numeric":
                self.counts[col].add(*_label_counts(frame[col], with_nulls=False))
        for col in self.slice_by:
            self.counts[f"slice:{col}"].add(*_label_counts(frame[col], with_nulls=True))

    def merge(self, other: SpecSketch) -> SpecSketch:
        """Fold `other` (a sketch of other rows, same columns) into this one; returns self."""
        self.rows += other.rows
        for col, (lo, hi) in other.bounds.items():
            self._widen(col, np.array([lo, hi]))
        self._sample(other.keys, other.sample)
        for col, values in other.distinct.items():
            self._union(col, values)
        for name, counts in other.counts.items():
            self.counts[name].merge(counts)
        return self

    def specs(self, bins: int = DEFAULT_BINS, top_k: int | None = None) -> dict[str, ColumnSpec]:
        """Column specs built by the ordinary spec builder from this summary (the columns'
        quantiles on a few threads)."""

        def one(col: str) -> ColumnSpec:
            if self.kinds[col] != "numeric":
                c = self.counts[col]
                return categorical_spec_from_counts(col, c.counts, top_k, not c.pruned)
            values = self.sample[col]
            if self.rows > self.keys.size and col in self.bounds:
                # A few known values the sample may have missed: the extremes, and every value
                # of a column with few of them (so a discrete column keeps its rare values).
                extra = [*self.bounds[col], *sorted(self.distinct.get(col) or ())]
                values = np.concatenate([values, np.array(extra)])
            return spec_from_reference(col, values, kind="numeric", bins=bins, top_k=top_k)

        columns = list(self.kinds)
        return dict(zip(columns, map_columns(one, columns), strict=True))

    def slice_values(self, column: str, max_values: int) -> frozenset[str] | None:
        """Labels of `column` kept as slices (None: all of them); the rest fold into "(other)"."""
        counts = self.counts[f"slice:{column}"]
        if len(counts.counts) <= max_values and not counts.pruned:
            return None
        return frozenset(counts.top(max_values))

    def _widen(self, col: str, x: NDArray[np.float64]) -> None:
        finite = x[np.isfinite(x)]
        if finite.size == 0:
            return
        lo, hi = float(finite.min()), float(finite.max())
        old = self.bounds.get(col)
        self.bounds[col] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))

    def _count_distinct(self, col: str, x: NDArray[np.float64]) -> None:
        if self.distinct.get(col) is None:
            return
        finite = x[np.isfinite(x)]
        # A continuous column shows more than DISTINCT_CAP values in its first few thousand:
        # then the whole batch need not be looked at to tell (the answer is the same).
        found = factorize(finite[: 4 * DISTINCT_CAP])[1]
        if len(found) <= DISTINCT_CAP:
            found = factorize(finite)[1]
        if len(found) > DISTINCT_CAP:
            self.distinct[col] = None
            return
        self._union(col, frozenset(float(v) for v in found))

    def _union(self, col: str, values: frozenset[float] | None) -> None:
        mine = self.distinct.get(col)
        both = None if mine is None or values is None else mine | values
        self.distinct[col] = None if both is None or len(both) > DISTINCT_CAP else both

    def _sample(self, keys: NDArray[np.float64], values: Mapping[str, NDArray[np.float64]]) -> None:
        if self.keys.size >= self.capacity:
            # Rows keyed above the current k-th smallest can never enter the sample.
            take = keys < self.keys.max()
            keys = keys[take]
            values = {c: v[take] for c, v in values.items()}
        all_keys = np.concatenate([self.keys, keys])
        merged = {c: np.concatenate([self.sample[c], values[c]]) for c in self.sample}
        if all_keys.size > self.capacity:
            keep = np.argpartition(all_keys, self.capacity - 1)[: self.capacity]
            all_keys = all_keys[keep]
            merged = {c: v[keep] for c, v in merged.items()}
        self.keys, self.sample = all_keys, merged


def sketch_kinds(
    frame: Any, columns: Sequence[str], categorical: Sequence[str] = ()
) -> dict[str, Kind]:
    """Column kinds as the in-memory path infers them (from a frame's dtypes; may be empty);
    columns in `categorical` are profiled as categories whatever they hold."""
    for col in columns:
        if col not in frame.columns:
            raise InputError(f"column '{col}' not found")
    forced = set(categorical)
    return {col: "categorical" if col in forced else infer_kind(col, frame[col]) for col in columns}


def _label_counts(values: Any, with_nulls: bool) -> tuple[list[str], list[int]]:
    codes, labels = label_codes(values)
    counts = np.bincount(codes[codes >= 0], minlength=len(labels)).tolist()
    nulls = int((codes < 0).sum())
    if with_nulls and nulls:
        labels.append(NULL_VALUE)
        counts.append(nulls)
    return labels, counts
