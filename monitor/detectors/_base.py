"""Detector interface, registry, result type and the shared edge-case policy.

A detector is a pure, batched statistic over two bucket-count vectors (reference, current),
registered by name with the column kinds it accepts and its default threshold. The same
function scores the observed pair and the resampled pairs of its null distribution.

Edge-case policy (one for every binned statistic):

* ``EPSILON`` (1e-4) is added to every bucket proportion, then renormalised, wherever a
  logarithm or ratio of proportions appears (PSI); JS, Hellinger, L∞, KS, chi² and Wasserstein
  need no smoothing (0·log 0 = 0, empty buckets just contribute 0).
* Fewer than ``MIN_N`` (30) non-null values on either side (rows, for ``missing_rate``) gives
  status ``insufficient_data`` with value and p-value None — never NaN, never ``drift`` — and
  a ``reason``. So do an all-null or all-non-finite side (0 values), and a pair a detector
  cannot judge (its ``degenerate`` hook: Wasserstein against a constant reference, whose sd of
  0 leaves no unit to measure in). A constant column is otherwise an ordinary one: the same
  constant on both sides is ``ok`` (p = 1), a moved one a ``drift``.
* Nulls (None, NaN, ±inf) are not part of the distribution; ``missing_rate`` watches them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from monitor.common.registry import Registry
from monitor.errors import InputError
from monitor.profiles.kinds import Profile

# `missing`: a reference column the current data does not carry (or carries as another kind);
# `new`: a current column the reference does not have. Both come with method SCHEMA_METHOD.
Status = Literal["ok", "drift", "insufficient_data", "missing", "new"]
STATUSES: tuple[Status, ...] = ("ok", "drift", "insufficient_data", "missing", "new")
SCHEMA_METHOD = "schema"
EPSILON = 1e-4
MIN_N = 30
# False-discovery level across one evaluation. 0.01, not 0.05: under "no drift anywhere" BH
# controls the chance of any false alarm per evaluation at alpha, and a daemon evaluates
# many windows a day.
DEFAULT_ALPHA = 0.01

Counts = NDArray[np.float64]  # shape (m, k): m pairs of k bucket counts
Batch = Callable[[Counts, Counts, "Pair"], NDArray[np.float64]]


@dataclass(frozen=True)
class Pair:
    """The two profiles a detector compares (same spec), with cached derived vectors."""

    reference: Profile
    current: Profile

    def __post_init__(self) -> None:
        if self.reference.spec.fingerprint != self.current.spec.fingerprint:
            raise InputError(
                f"column '{self.reference.spec.column}': reference and current profiles were "
                "built on different specs"
            )

    @property
    def column(self) -> str:
        return self.reference.spec.column


@dataclass(frozen=True)
class NullScaling:
    """How a detector's no-drift statistic scales with the sample sizes, for large counts.

    With ``s = sqrt(1/n_reference + 1/n_current)`` (the standard deviation of a bucket
    proportion's difference, in units of its reference spread), the statistic's null
    distribution is ``s**power`` times one fixed distribution once every occupied reference
    bucket expects at least ``min_expected`` rows on both sides: distances linear in the
    proportion difference (Wasserstein, L∞) or in its root-sum-square (Hellinger, JS) have
    power 1, divergences quadratic in it (PSI) power 2. The bootstrap null is then drawn once
    per reference and rescaled (see `monitor.detectors._null`).
    """

    power: int
    min_expected: float = 50.0


class PValue(Protocol):
    """An analytic p-value of an observed statistic; None means 'use the bootstrap null'."""

    def __call__(self, value: float, pair: Pair) -> float | None: ...


@dataclass(frozen=True)
class Detector:
    """A registered drift statistic.

    ``statistic`` maps batches of (reference, current) bucket counts to one value per row;
    ``buckets`` turns a profile into the count vector it works on (default: the profile's
    buckets); ``p_value`` is analytic where the statistic has a known null distribution,
    otherwise None and the null is a multinomial bootstrap from the reference proportions;
    ``evidence``: whether the overwhelming-evidence rule applies on exact-count columns (it
    compares value distributions; ``missing_rate``, which watches nulls, opts out);
    ``null_scaling``: how the bootstrap null rescales with the sample sizes (None: it is drawn
    at every current size); ``degenerate``: why a pair cannot be judged by this detector (None:
    it can), which makes the result ``insufficient_data`` with that reason.
    """

    name: str
    kinds: frozenset[str]
    default_threshold: float
    statistic: Batch
    description: str
    p_value: PValue | None = None
    buckets: Callable[[Profile], NDArray[np.float64]] = field(
        default=lambda p: p.counts.astype(np.float64)
    )
    size: Callable[[Profile], int] = field(default=lambda p: p.n)
    observed: Callable[[Pair], float] | None = None
    evidence: bool = True
    null_scaling: NullScaling | None = None
    degenerate: Callable[[Pair], str | None] | None = None

    def score(self, pair: Pair) -> float:
        """The statistic of the observed pair (`observed` when the detector has a finer one)."""
        if self.observed is not None:
            return self.observed(pair)
        ref = self.buckets(pair.reference)[None, :]
        cur = self.buckets(pair.current)[None, :]
        return float(self.statistic(ref, cur, pair)[0])


DETECTORS: Registry[Detector] = Registry("drift method")


def register(detector: Detector) -> Detector:
    """Add a detector; a name registered twice raises RegistryError."""
    return DETECTORS.add(detector.name, detector)


def get_detector(name: str) -> Detector:
    """The detector called `name`; RegistryError listing the valid names otherwise."""
    return DETECTORS.lookup(name)


def detector_names() -> list[str]:
    return DETECTORS.names()


def detectors() -> Mapping[str, Detector]:
    """All registered detectors by name."""
    return dict(DETECTORS)


@dataclass(frozen=True)
class Bound:
    """A drift bound and what set it: "constant", "reference" or "floor" (see variability)."""

    value: float
    source: str


class ThresholdStrategy(Protocol):
    """Where a detector's drift bound comes from (separate from the statistic).

    ``bound`` gives the value a result's statistic must exceed to count as drift, and names
    what set it, so every stored result says which strategy decided its threshold.
    """

    def bound(self, detector: Detector, column: str) -> Bound: ...


@dataclass(frozen=True)
class ConstantThresholds:
    """Constant bounds: per-column or per-method overrides, otherwise each detector's default."""

    by_method: Mapping[str, float] = field(default_factory=dict)
    by_column: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.by_method:
            get_detector(name)

    def threshold(self, detector: Detector, column: str) -> float:
        """The bound's value."""
        if column in self.by_column:
            return self.by_column[column]
        return self.by_method.get(detector.name, detector.default_threshold)

    def bound(self, detector: Detector, column: str) -> Bound:
        return Bound(self.threshold(detector, column), "constant")


@dataclass(frozen=True)
class DriftResult:
    """One column's comparison, overall (slice None) or within one slice."""

    column: str
    slice: dict[str, str] | None
    kind: str
    method: str
    value: float | None
    threshold: float
    p_value: float | None
    n_reference: int
    n_current: int
    status: Status
    # Which threshold strategy set `threshold` ("constant", "reference", "floor").
    threshold_by: str = "constant"
    # The overwhelming-evidence alpha applied to this result (exact-count columns only, see
    # `evidence`); None where only the threshold rule decides.
    evidence_alpha: float | None = None
    # Why the status is `insufficient_data` (None otherwise, and in results read back from
    # storage, which does not keep it).
    reason: str | None = None

    @property
    def decided_by(self) -> str | None:
        """Which rule made this a drift: "threshold" (value above it and significant) or
        "evidence" (p below the evidence alpha while the value is within the threshold)."""
        if self.status != "drift":
            return None
        assert self.value is not None
        return "threshold" if self.value > self.threshold else "evidence"

    def to_dict(self) -> dict[str, Any]:
        """The JSON row of the drift report."""
        return {
            "column": self.column,
            "slice": self.slice,
            "kind": self.kind,
            "method": self.method,
            "value": self.value,
            "threshold": self.threshold,
            "threshold_by": self.threshold_by,
            "p_value": self.p_value,
            "n_reference": self.n_reference,
            "n_current": self.n_current,
            "status": self.status,
            "decided_by": self.decided_by,
            "evidence_alpha": self.evidence_alpha,
            "reason": self.reason,
        }


def proportions(counts: Counts) -> Counts:
    """Rows of counts as proportions (an all-zero row stays zero)."""
    total = counts.sum(axis=1, keepdims=True)
    out: Counts = np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)
    return out


def smoothed(counts: Counts) -> Counts:
    """Proportions with EPSILON added to every bucket, renormalised (for logs and ratios)."""
    p = proportions(counts) + EPSILON
    out: Counts = p / p.sum(axis=1, keepdims=True)
    return out
