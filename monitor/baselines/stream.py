"""Profiling a dataset larger than memory: one sketch pass for specs, one profiling pass.

Pass 1 feeds every batch to a `SpecSketch` (bounded sample, exact min/max, bounded category
and slice-value counts); the ordinary spec builder makes the specs from it. Pass 2 profiles
each batch with `profile_frame` on those specs and merges the partial profile sets, which is
exact because profiles merge associatively. Slice values are chosen once from the sketch's
counts (the ``max_values`` most frequent, ties by label) so every batch folds the same values
into "(other)". Reference chunks for derived thresholds are contiguous row ranges, as in memory.
A dataset of at most ``REPLAY_CELLS`` values is read once: pass 2 profiles the frames pass 1
read (the same batches, so the same profiles bit for bit); a larger one is read again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

from monitor.common import progress
from monitor.common.columns import Coded
from monitor.data.datasets import DEFAULT_BATCH_ROWS, DataSource
from monitor.detectors import Variability
from monitor.detectors.variability import reference_variability
from monitor.profiles import ColumnSpec, ProfileSet, profile_frame
from monitor.profiles.categorical import category_label
from monitor.profiles.codes import label_codes, native
from monitor.profiles.dataset import DEFAULT_MAX_SLICE_VALUES
from monitor.profiles.sketch import SpecSketch, sketch_kinds
from monitor.profiles.slicekeys import NULL_VALUE, OTHER_VALUE

Folds = Mapping[str, frozenset[str]]
# Values (rows x columns) of the sketch pass kept for the profiling pass: 4M values are ~32 MiB
# of pointers and floats plus the distinct strings (a REFERENCE of 200k rows x 12 columns).
REPLAY_CELLS = 1 << 22


@dataclass(frozen=True)
class StreamedProfile:
    """Profiles of a whole dataset and, when chunks were asked for, its reference variability."""

    profiles: ProfileSet
    specs: Mapping[str, ColumnSpec]
    variability: Variability | None = None


def profile_source(
    source: DataSource,
    columns: Sequence[str],
    slice_by: Sequence[str] = (),
    *,
    specs: Mapping[str, ColumnSpec] | None = None,
    categorical: Sequence[str] = (),
    bins: int = 64,
    top_k: int | None = None,
    chunks: int = 0,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> StreamedProfile:
    """Profile `source` in batches: specs from a sketch pass unless given, then one pass.

    Columns in `categorical` are profiled as categories even when they hold numbers.
    """
    source.require([*columns, *slice_by])
    wanted = list(dict.fromkeys([*columns, *slice_by]))
    kinds = (
        {}
        if specs is not None
        else sketch_kinds(source.empty_columns(columns), columns, categorical)
    )
    sketch = SpecSketch(kinds, tuple(slice_by))
    # A small dataset's frames from the sketch pass are profiled again, not read again.
    kept: list[Any] | None = [] if specs is None else None
    if specs is None or slice_by or chunks:
        # With specs given only the slice columns are read (for their slice values).
        for frame in source.frames(wanted if specs is None else list(slice_by), batch_rows):
            sketch.add(frame)
            kept = _kept(kept, frame, len(wanted))
    if specs is None:
        specs = sketch.specs(bins, top_k)
    folds = slice_folds(sketch, slice_by)
    whole, parts = profile_batches(
        source.frames(wanted, batch_rows) if kept is None else _replayed(source, kept),
        specs,
        slice_by,
        folds,
        source.empty_columns(wanted),
        chunks,
        sketch.rows,
    )
    variability = reference_variability(whole, parts) if chunks else None
    return StreamedProfile(whole, specs, variability)


def _kept(kept: list[Any] | None, frame: Any, width: int) -> list[Any] | None:
    """`kept` with `frame` appended, or None (read again) once they pass REPLAY_CELLS values."""
    if kept is None or (sum(map(len, kept)) + len(frame)) * width > REPLAY_CELLS:
        return None
    kept.append(frame)
    return kept


def _replayed(source: DataSource, frames: list[Any]) -> Iterator[Any]:
    """`frames` again, reported to the progress observer as a pass over `source` would be."""
    if progress.watching():
        progress.begin(source.path, source.row_estimate())
    for frame in frames:
        progress.advance(len(frame))
        yield frame


def slice_folds(
    sketch: SpecSketch, slice_by: Sequence[str], max_values: int = DEFAULT_MAX_SLICE_VALUES
) -> dict[str, frozenset[str]]:
    """For each slice column with too many values, the values kept as slices."""
    folds = {}
    for col in slice_by:
        keep = sketch.slice_values(col, max_values)
        if keep is not None:
            folds[col] = keep
    return folds


def profile_batches(
    frames: Iterable[Any],
    specs: Mapping[str, ColumnSpec],
    slice_by: Sequence[str],
    folds: Folds,
    empty: Any,
    chunks: int = 0,
    n_rows: int = 0,
) -> tuple[ProfileSet, list[ProfileSet]]:
    """Merged profiles of all `frames`, and of each of `chunks` contiguous row ranges."""
    base = _profile(empty, specs, slice_by, folds)
    parts = [base] * max(chunks, 1)
    bounds = np.linspace(0, n_rows, len(parts) + 1).round().astype(int)
    offset = 0
    for frame in frames:
        for i in range(len(parts)):
            a, b = max(bounds[i] - offset, 0), min(bounds[i + 1] - offset, len(frame))
            if chunks == 0:
                a, b = 0, len(frame)
            if a < b:
                parts[i] = parts[i].merge(_profile(frame.iloc[a:b], specs, slice_by, folds))
        offset += len(frame)
    return reduce(ProfileSet.merge, parts[1:], parts[0]), parts if chunks else []


def _profile(
    frame: Any, specs: Mapping[str, ColumnSpec], slice_by: Sequence[str], folds: Folds
) -> ProfileSet:
    if folds:
        frame = frame.assign(**{col: _fold(frame[col], keep) for col, keep in folds.items()})
    # Folded columns hold at most max_values kept labels plus "(other)": nothing folds again.
    return profile_frame(frame, specs, slice_by, DEFAULT_MAX_SLICE_VALUES + 1)


def _fold(values: Any, keep: frozenset[str]) -> Any:
    """Slice labels of `values`, those not kept as "(other)" (as a pandas Series for a pandas
    column, else as `Coded` labels)."""
    if not native(values):
        return _fold_series(values, keep)
    codes, found = label_codes(values, dense=False)
    labels: list[str | None] = [lab if lab in keep else OTHER_VALUE for lab in found]
    labels.append(None if NULL_VALUE in keep else OTHER_VALUE)
    names: dict[str, int] = {}
    lut = [-1 if lab is None else names.setdefault(lab, len(names)) for lab in labels]
    return Coded(np.asarray(lut, dtype=np.intp)[codes], list(names), dense=False, text=True)


def _fold_series(values: Any, keep: frozenset[str]) -> Any:
    import pandas as pd

    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    labels: list[str | None] = [
        lab if lab in keep else OTHER_VALUE for lab in map(category_label, uniques)
    ]
    labels.append(None if NULL_VALUE in keep else OTHER_VALUE)
    return pd.Series(np.asarray(labels, dtype=object)[codes], index=values.index, dtype=object)
