"""Categorical profiles: top-K category counts plus other, unseen and null counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.errors import InputError
from monitor.profiles._binning import Binning
from monitor.profiles._wire import encode_parts
from monitor.profiles.numeric import _check_same_spec
from monitor.profiles.slicekeys import value_text


def category_label(value: Any) -> str:
    """The canonical text of a non-null category value: the slice-key text (`value_text`)."""
    text = value_text(value)
    return "nan" if text is None else text


def _factorize(values: Any) -> tuple[NDArray[np.intp], list[str]]:
    import pandas as pd

    if not hasattr(values, "dtype") or getattr(values, "ndim", 1) != 1:
        values = pd.Series(np.asarray(values, dtype=object).reshape(-1), dtype=object)
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.intp), [category_label(u) for u in np.asarray(uniques)]


def value_counts(values: Any) -> dict[str, int]:
    """Non-null counts per canonical category label."""
    codes, labels = _factorize(values)
    counts = np.bincount(codes[codes >= 0], minlength=len(labels))
    out: Counter[str] = Counter()
    for label, c in zip(labels, counts.tolist(), strict=True):
        out[label] += c
    return dict(out)


def encode_categorical(spec: Binning, values: Any) -> NDArray[np.intp]:
    """Bucket index per value: a category's position, then other, unseen; nulls last."""
    codes, labels = _factorize(values)
    return buckets_of(spec, codes, labels)


def buckets_of(spec: Binning, codes: NDArray[np.intp], labels: Sequence[str]) -> NDArray[np.intp]:
    """Bucket index of each code (-1: null) whose canonical label is `labels[code]`: the one
    owner of the rule (a category's position, then other, unseen; nulls last)."""
    k = len(spec.categories)
    position = {c: i for i, c in enumerate(spec.categories)}
    unseen = k + 1 if spec.tail_complete else k
    lut = np.fromiter(
        (position.get(lab, k if lab in spec.tail else unseen) for lab in labels),
        dtype=np.intp,
        count=len(labels),
    )
    # Code -1 (null) indexes the appended last entry.
    return np.append(lut, k + 2)[codes]


@dataclass(frozen=True, eq=False)
class CategoricalProfile:
    """Counts per bucket ``[*spec.categories, other, unseen]`` and the null count.

    ``other`` counts values the reference had beyond its top K; ``unseen`` values the reference
    never had. None and NaN are nulls. Merging adds counts, so it is exact.
    """

    spec: Binning
    counts: NDArray[np.int64]
    null_count: int

    def __post_init__(self) -> None:
        if self.counts.shape != (self.spec.n_buckets,):
            raise InputError(f"column '{self.spec.column}': profile arrays do not match its spec")

    @property
    def kind(self) -> str:
        return "categorical"

    @cached_property
    def n(self) -> int:
        """Number of non-null values (profiles are immutable: counted once)."""
        return int(self.counts.sum())

    @property
    def other_count(self) -> int:
        return int(self.counts[-2])

    @property
    def unseen_count(self) -> int:
        return int(self.counts[-1])

    def category_counts(self) -> dict[str, int]:
        """Counts of the spec's categories by name."""
        return dict(zip(self.spec.categories, self.counts[:-2].tolist(), strict=True))

    def merge(self, other: CategoricalProfile) -> CategoricalProfile:
        """The profile of both inputs' rows together."""
        _check_same_spec(self, other)
        return CategoricalProfile(
            self.spec, self.counts + other.counts, self.null_count + other.null_count
        )

    @classmethod
    def merge_many(cls, profiles: Sequence[CategoricalProfile]) -> CategoricalProfile:
        """`profiles[0].merge(profiles[1]).merge(...)` with one array sum."""
        first = profiles[0]
        if len(profiles) == 1:
            return first
        for other in profiles[1:]:
            _check_same_spec(first, other)
        counts = np.add.reduce(np.stack([p.counts for p in profiles]), axis=0)
        return CategoricalProfile(first.spec, counts, sum(p.null_count for p in profiles))

    def to_bytes(self) -> bytes:
        """Compact self-describing encoding; `profile_from_bytes` restores it."""
        return encode_parts(self.spec, self.null_count, self.counts)


def profile_categorical(spec: Binning, values: Any) -> CategoricalProfile:
    """Profile categorical values against the spec's categories."""
    return profile_buckets(spec, encode_categorical(spec, values))


def profile_buckets(spec: Binning, buckets: NDArray[np.intp]) -> CategoricalProfile:
    """Profile values already bucketed by `encode_categorical`."""
    nb = spec.n_buckets
    counts = np.bincount(buckets, minlength=nb + 1)
    return CategoricalProfile(spec, counts[:nb].astype(np.int64), int(counts[nb]))
