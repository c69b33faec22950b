"""Dataset-level profiling: every column of a DataFrame, overall and per slice."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.errors import ConflictError, InputError
from monitor.profiles._parallel import map_columns
from monitor.profiles.categorical import CategoricalProfile, profile_buckets
from monitor.profiles.codes import encode_categories, label_codes
from monitor.profiles.kinds import Profile
from monitor.profiles.numeric import (
    NumericProfile,
    as_float_array,
    encode_numeric,
    profile_encoded,
)
from monitor.profiles.slicekeys import NULL_VALUE, OTHER_VALUE, OVERALL, slice_key
from monitor.profiles.spec import ColumnSpec

DEFAULT_MAX_SLICE_VALUES = 50

Key = tuple[str, str]  # (slice_key, column)


@dataclass(frozen=True)
class ProfileSet:
    """Profiles of a dataset keyed by (slice_key, column); slice_key "" is the whole dataset.

    ``rows`` maps each slice key to its row count (nulls included), so empty slices and
    all-null columns stay visible.
    """

    profiles: Mapping[Key, Profile]
    rows: Mapping[str, int]
    slice_by: tuple[str, ...] = ()
    specs: Mapping[str, ColumnSpec] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        return int(self.rows.get(OVERALL, 0))

    @property
    def columns(self) -> list[str]:
        return list(self.specs)

    @property
    def slice_keys(self) -> list[str]:
        """Slice keys other than the overall one, sorted."""
        return sorted(k for k in self.rows if k != OVERALL)

    def get(self, column: str, key: str = OVERALL) -> Profile:
        try:
            return self.profiles[(key, column)]
        except KeyError:
            where = "overall" if key == OVERALL else f"slice {key}"
            raise InputError(f"no profile for column '{column}' ({where})") from None

    def __iter__(self) -> Iterator[Key]:
        return iter(self.profiles)

    def merge(self, other: ProfileSet) -> ProfileSet:
        """Profiles of both datasets together; a key missing on one side is taken as is."""
        if self.slice_by != other.slice_by:
            raise ConflictError(
                f"cannot merge profile sets sliced by {list(self.slice_by)} and "
                f"{list(other.slice_by)}"
            )
        merged: dict[Key, Profile] = dict(self.profiles)
        for key, prof in other.profiles.items():
            mine = merged.get(key)
            merged[key] = prof if mine is None else mine.merge(prof)  # type: ignore[arg-type]
        rows = dict(self.rows)
        for k, v in other.rows.items():
            rows[k] = rows.get(k, 0) + v
        return ProfileSet(merged, rows, self.slice_by, {**other.specs, **self.specs})

    @classmethod
    def merged(cls, sets: Sequence[ProfileSet]) -> ProfileSet:
        """`sets[0].merge(sets[1]).merge(...)`, equal to it, each (slice, column) merged once
        (`merge_profiles`) instead of once per set."""
        first = sets[0]
        for other in sets[1:]:
            if other.slice_by != first.slice_by:
                raise ConflictError(
                    f"cannot merge profile sets sliced by {list(first.slice_by)} and "
                    f"{list(other.slice_by)}"
                )
        by_key: dict[Key, list[Profile]] = {}
        rows: dict[str, int] = {}
        specs: dict[str, ColumnSpec] = {}
        for one in sets:
            for key, prof in one.profiles.items():
                by_key.setdefault(key, []).append(prof)
            for k, v in one.rows.items():
                rows[k] = rows.get(k, 0) + v
            specs = {**one.specs, **specs}
        profiles = {key: merge_profiles(found) for key, found in by_key.items()}
        return ProfileSet(profiles, rows, first.slice_by, specs)


def merge_profiles(profiles: Sequence[Profile]) -> Profile:
    """One (slice, column)'s profiles merged in order (`merge` of each into the first's)."""
    first = profiles[0]
    if isinstance(first, NumericProfile):
        return NumericProfile.merge_many(profiles)  # type: ignore[arg-type]
    return CategoricalProfile.merge_many(profiles)  # type: ignore[arg-type]


def profile_frame(
    frame: Any,
    specs: Mapping[str, ColumnSpec],
    slice_by: Sequence[str] = (),
    max_slice_values: int = DEFAULT_MAX_SLICE_VALUES,
) -> ProfileSet:
    """Profile a pandas DataFrame (or `Columns`, monitor.common.columns) with `specs`, overall
    and for each value of each slice column.

    Each slice column is sliced on its own (not their cross product). Values past the
    ``max_slice_values`` most frequent of a column go to the "(other)" slice; nulls to "(null)".
    """
    missing = [c for c in [*specs, *slice_by] if c not in frame.columns]
    if missing:
        raise InputError(f"column '{missing[0]}' not found in data")

    def job(col: str) -> tuple[Encoded | None, Profile]:
        enc = _encode(specs[col], frame[col])
        # Encodings are kept only when slices reuse them (they cost 16 bytes a value).
        return (enc if slice_by else None), _profile(specs[col], enc, None)

    done = dict(zip(specs, map_columns(job, list(specs)), strict=True))
    profiles: dict[Key, Profile] = {(OVERALL, col): prof for col, (_, prof) in done.items()}
    rows = {OVERALL: len(frame)}
    for scol in slice_by:
        for key, positions in _slice_positions(frame[scol], scol, max_slice_values):
            rows[key] = int(positions.size)
            for col, spec in specs.items():
                if col == scol:
                    continue  # within its own slices a slice column holds one value
                enc = done[col][0]
                assert enc is not None
                profiles[(key, col)] = _profile(spec, enc, positions)
    return ProfileSet(profiles, rows, tuple(slice_by), dict(specs))


Encoded = tuple[NDArray[np.float64] | None, NDArray[np.intp]]


def profile_subsets(
    spec: ColumnSpec, values: Any, subsets: Sequence[NDArray[np.intp] | None]
) -> list[Profile]:
    """Profiles of `values` at each subset of positions (None: all), bucketing values once."""
    enc = _encode(spec, values)
    return [_profile(spec, enc, positions) for positions in subsets]


def _encode(spec: ColumnSpec, values: Any) -> Encoded:
    if spec.kind == "numeric":
        x = as_float_array(spec.column, values)
        return x, encode_numeric(spec, x)
    return None, encode_categories(spec, values)


def _profile(spec: ColumnSpec, enc: Encoded, positions: NDArray[np.intp] | None) -> Profile:
    x, idx = enc
    if positions is not None:
        idx = idx[positions]
        x = None if x is None else x[positions]
    if x is None:
        return profile_buckets(spec, idx)
    return profile_encoded(spec, x, idx)


def _slice_positions(
    values: Any, column: str, max_values: int
) -> Iterator[tuple[str, NDArray[np.intp]]]:
    codes, labels = label_codes(values)
    labels.append(NULL_VALUE)
    codes = np.where(codes < 0, len(labels) - 1, codes)
    counts = np.bincount(codes, minlength=len(labels))
    ranked = sorted((i for i in range(len(labels)) if counts[i]), key=lambda i: -counts[i])
    keep = set(ranked[:max_values])
    if len(ranked) > max_values:
        codes = np.where(np.isin(codes, list(keep)), codes, len(labels))
        labels.append(OTHER_VALUE)
        keep.add(len(labels) - 1)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(labels) + 1))
    for i in sorted(keep, key=lambda i: labels[i]):
        yield slice_key(column, labels[i]), order[bounds[i] : bounds[i + 1]]
