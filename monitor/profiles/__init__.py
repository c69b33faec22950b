"""Mergeable per-column profiles: the summaries baselines and windows are compared through.

A `ColumnSpec` is derived once from reference data (quantile edges or top-K categories); every
profile of that column is built on it, so profiles of partitions, replicas and windows merge
exactly and detectors compare like with like.
"""

from __future__ import annotations

from monitor.profiles._binning import Binning
from monitor.profiles._codec import profile_from_bytes, profile_spec, profiles_from_bytes
from monitor.profiles.categorical import CategoricalProfile
from monitor.profiles.dataset import ProfileSet, merge_profiles, profile_frame, profile_subsets
from monitor.profiles.kinds import Profile
from monitor.profiles.numeric import NumericProfile
from monitor.profiles.slicekeys import (
    NULL_VALUE,
    OTHER_VALUE,
    OVERALL,
    key_of,
    parse_slice_key,
    slice_key,
    slice_key_from_text,
    slice_label,
    value_text,
)
from monitor.profiles.spec import (
    DEFAULT_BINS,
    DEFAULT_TOP_K,
    ColumnSpec,
    compared_columns,
    spec_from_dict,
    spec_from_reference,
    spec_of,
    specs_for,
)

__all__ = [
    "DEFAULT_BINS",
    "DEFAULT_TOP_K",
    "NULL_VALUE",
    "OTHER_VALUE",
    "OVERALL",
    "Binning",
    "CategoricalProfile",
    "ColumnSpec",
    "NumericProfile",
    "Profile",
    "ProfileSet",
    "compared_columns",
    "key_of",
    "merge_profiles",
    "parse_slice_key",
    "profile_frame",
    "profile_from_bytes",
    "profile_spec",
    "profile_subsets",
    "profiles_from_bytes",
    "slice_key",
    "slice_key_from_text",
    "slice_label",
    "spec_from_dict",
    "spec_from_reference",
    "spec_of",
    "specs_for",
    "value_text",
]
