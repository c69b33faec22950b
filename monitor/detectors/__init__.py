"""Drift detectors: registered statistics over two profiles, sample-size aware verdicts.

Each module registers one detector on import; `get_detector(name)` finds it. Defaults per
column kind: Wasserstein (normalised) for numeric, Jensen–Shannon for categorical — the same
choice Evidently makes for large samples — plus `missing_rate` where nulls occur.
Bounds come from a threshold strategy: constant (`ConstantThresholds`) or derived from the
reference's own variability (`ReferenceThresholds`, see `variability`).
"""

from __future__ import annotations

from monitor.detectors import (  # noqa: F401  (importing registers the detectors)
    chi2,
    hellinger,
    jensen_shannon,
    ks,
    l_infinity,
    missing_rate,
    psi,
    wasserstein,
)
from monitor.detectors._base import (
    DEFAULT_ALPHA,
    EPSILON,
    MIN_N,
    STATUSES,
    Bound,
    ConstantThresholds,
    Detector,
    DriftResult,
    NullScaling,
    Pair,
    Status,
    ThresholdStrategy,
    detector_names,
    detectors,
    get_detector,
    register,
)
from monitor.detectors._respec import rebin
from monitor.detectors.compare import adjust_p_values, benjamini_hochberg, compare
from monitor.detectors.evaluate import DEFAULT_METHODS, evaluate
from monitor.detectors.variability import (
    THRESHOLD_STRATEGIES,
    ReferenceThresholds,
    Spread,
    Variability,
    chunk_profiles,
    profile_variability,
    reference_variability,
    threshold_strategy,
)

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_METHODS",
    "EPSILON",
    "MIN_N",
    "STATUSES",
    "THRESHOLD_STRATEGIES",
    "Bound",
    "ConstantThresholds",
    "Detector",
    "DriftResult",
    "NullScaling",
    "Pair",
    "ReferenceThresholds",
    "Spread",
    "Status",
    "ThresholdStrategy",
    "Variability",
    "adjust_p_values",
    "benjamini_hochberg",
    "chunk_profiles",
    "compare",
    "detector_names",
    "detectors",
    "evaluate",
    "get_detector",
    "profile_variability",
    "rebin",
    "reference_variability",
    "register",
    "threshold_strategy",
]
