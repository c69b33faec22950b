"""A slice column's own distribution, from the row counts of its slices.

`--slice-by C` and a model's `slices` split every column by C; C itself drifts too (a region
mix moving from 50% to 90% "us"). Where a profile set did not profile C as a column (a daemon
window whose C is an event attribute, a baseline made before slice columns were profiled),
the per-slice row counts already hold C's exact distribution over its bounded slice values.
"""

from __future__ import annotations

import numpy as np

from monitor.profiles import OVERALL, ColumnSpec, ProfileSet, parse_slice_key, spec_from_reference


def with_slice_columns(reference: ProfileSet, current: ProfileSet) -> tuple[ProfileSet, ProfileSet]:
    """Both sets with an overall profile of each slice column either set lacks."""
    for column in reference.slice_by:
        if column in reference.specs and column in current.specs:
            continue
        ref_values = _values(reference, column)
        if ref_values is None or column not in current.slice_by:
            continue
        spec = reference.specs.get(column) or spec_from_reference(
            column, ref_values, kind="categorical"
        )
        reference = _added(reference, spec, ref_values)
        cur_values = _values(current, column)
        current = _added(current, spec, cur_values if cur_values is not None else [])
    return reference, current


def _values(profiles: ProfileSet, column: str) -> np.ndarray | None:
    """One entry per row: each slice value of `column` repeated by its row count."""
    pairs = []
    for key in profiles.slice_keys:
        parsed = parse_slice_key(key)
        if parsed is not None and list(parsed) == [column]:
            pairs.append((parsed[column], profiles.rows[key]))
    if not pairs:
        return None
    values = np.array([v for v, _ in pairs], dtype=object)
    return np.repeat(values, [c for _, c in pairs])


def _added(profiles: ProfileSet, spec: ColumnSpec, values: object) -> ProfileSet:
    if spec.column in profiles.specs:
        return profiles
    if spec.kind == "numeric":  # slice values are strings; "(other)" and the like are nulls
        values = np.array([_number(v) for v in np.asarray(values, dtype=object)], dtype=float)
    merged = {**profiles.profiles, (OVERALL, spec.column): spec.profile(values)}
    specs = {**profiles.specs, spec.column: spec}
    return ProfileSet(merged, profiles.rows, profiles.slice_by, specs)


def _number(value: object) -> float:
    try:
        return float(str(value))
    except ValueError:
        return float("nan")
