"""A slice column's own distribution, from the row counts of its slices.

`--slice-by C` and a model's `slices` split every column by C; C itself drifts too (a region
mix moving from 50% to 90% "us"). Where a profile set did not profile C as a column (a daemon
window whose C is an event attribute, a baseline made before slice columns were profiled),
the per-slice row counts already hold C's exact distribution over its bounded slice values.
"""

from __future__ import annotations

import weakref

import numpy as np

from monitor.profiles import (
    OVERALL,
    ColumnSpec,
    Profile,
    ProfileSet,
    parse_slice_key,
    spec_from_reference,
    spec_of,
)

Added = tuple[ColumnSpec, Profile] | None
"""A slice column's spec and the reference's profile of it (None: the reference has no slices
of it)."""

# By id(reference), dropped with it: a tick compares every window and period with one baseline,
# and its slice columns' spec and profile (~0.4 ms each) are the same every time.
_REFERENCES: dict[int, dict[str, Added]] = {}


def with_slice_columns(reference: ProfileSet, current: ProfileSet) -> tuple[ProfileSet, ProfileSet]:
    """Both sets with an overall profile of each slice column either set lacks."""
    for column in reference.slice_by:
        if column in reference.specs and column in current.specs:
            continue
        found = _of_reference(reference, column)
        if found is None or column not in current.slice_by:
            continue
        spec, ref_profile = found
        reference = _with(reference, ref_profile)
        cur_values = _values(current, column)
        current = _with(current, _profile(spec, cur_values if cur_values is not None else []))
    return reference, current


def _of_reference(reference: ProfileSet, column: str) -> Added:
    """The slice column's spec (the reference's own, else from its slices' values) and the
    reference's profile of it, computed once per reference."""
    known = _REFERENCES.get(id(reference))
    if known is None:
        known = _REFERENCES[id(reference)] = {}
        weakref.finalize(reference, _REFERENCES.pop, id(reference), None)
    if column not in known:
        values = _values(reference, column)
        if values is None:
            known[column] = None
        else:
            spec = reference.specs.get(column) or spec_from_reference(
                column, values, kind="categorical"
            )
            known[column] = (spec, _profile(spec, values))
    return known[column]


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


def _profile(spec: ColumnSpec, values: object) -> Profile:
    if spec.kind == "numeric":  # slice values are strings; "(other)" and the like are nulls
        values = np.array([_number(v) for v in np.asarray(values, dtype=object)], dtype=float)
    return spec.profile(values)


def _with(profiles: ProfileSet, profile: Profile) -> ProfileSet:
    spec = spec_of(profile)
    if spec.column in profiles.specs:
        return profiles
    merged = {**profiles.profiles, (OVERALL, spec.column): profile}
    specs = {**profiles.specs, spec.column: spec}
    return ProfileSet(merged, profiles.rows, profiles.slice_by, specs)


def _number(value: object) -> float:
    try:
        return float(str(value))
    except ValueError:
        return float("nan")
