"""Mergeable per-column profiles: the summaries baselines and windows are compared through.

A `ColumnSpec` is derived once from reference data (quantile edges or top-K categories); every
profile of that column is built on it, so profiles of partitions, replicas and windows merge
exactly and detectors compare like with like.
"""

from __future__ import annotations

from monitor.profiles.categorical import CategoricalProfile
from monitor.profiles.codec import profile_from_bytes
from monitor.profiles.dataset import (
    OVERALL,
    ProfileSet,
    parse_slice_key,
    profile_frame,
    profile_subsets,
    slice_key,
)
from monitor.profiles.kinds import Profile
from monitor.profiles.numeric import NumericProfile
from monitor.profiles.spec import (
    DEFAULT_BINS,
    DEFAULT_TOP_K,
    ColumnSpec,
    compared_columns,
    spec_from_dict,
    spec_from_reference,
    specs_for,
)

__all__ = [
    "DEFAULT_BINS",
    "DEFAULT_TOP_K",
    "OVERALL",
    "CategoricalProfile",
    "ColumnSpec",
    "NumericProfile",
    "Profile",
    "ProfileSet",
    "compared_columns",
    "parse_slice_key",
    "profile_frame",
    "profile_from_bytes",
    "profile_subsets",
    "slice_key",
    "spec_from_dict",
    "spec_from_reference",
    "specs_for",
]
