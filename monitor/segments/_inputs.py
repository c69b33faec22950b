"""The search's options, validated once, and the screening of its input columns.

The edge-case policy of every mode: a requested column absent from the frame is an InputError
naming it (a user's mistake); a feature with no value at all is skipped and listed in the
report's `skipped`; no usable feature, a single label class or fewer rows than twice the
minimum support give a report with status `insufficient_data` and the reason, never a search.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from monitor.errors import InputError

# SliceLine's weight of excess loss against size, per mode. The label-free losses are bounded
# close to their mean: an expected error is at most 0.5, so a segment's is at most 0.5 / mean
# times the average; drift's loss ("the row is current") at most N / N_current times, about 2.
# At 0.95 a 1% segment needs 20 times the average loss to score above 0, so those modes weigh
# the excess more: at 0.999 a 1% segment whose current share rose by a tenth scores above 0.
MODE_SCORE_ALPHA = {"labels": 0.95, "estimated": 0.99, "drift": 0.999}


@dataclass(frozen=True)
class Options:
    """What every mode's search shares: lattice depth, support, reporting and binning."""

    max_predicates: int = 3
    min_support: int = 30
    min_share: float = 0.01
    top: int = 10
    alpha: float = 0.05
    score_alpha: float | None = None  # None: the mode's default (MODE_SCORE_ALPHA)
    bins: int = 10

    def __post_init__(self) -> None:
        if not 1 <= self.max_predicates <= 5:
            raise InputError(f"max_predicates {self.max_predicates}: use 1 to 5")
        if self.min_support < 1 or self.top < 1:
            raise InputError("min_support and top must be positive")
        if not 0 <= self.min_share < 1 or not 0 < self.alpha < 1:
            raise InputError("min_share and alpha must be in (0, 1)")
        if not 0 < (self.score_alpha or 1) <= 1 or self.bins < 2:
            raise InputError("score_alpha must be in (0, 1] and bins at least 2")

    def weight(self, mode: str) -> float:
        """SliceLine's alpha: the one given, else the mode's default."""
        return self.score_alpha if self.score_alpha is not None else MODE_SCORE_ALPHA[mode]

    def sigma(self, n: int) -> int:
        """The minimum support of a segment among `n` rows."""
        return max(self.min_support, math.ceil(self.min_share * n))


def require(frame: Any, columns: Sequence[str], where: str = "") -> None:
    """InputError naming the first of `columns` the frame lacks."""
    for col in columns:
        if col not in frame.columns:
            raise InputError(f"{where}column '{col}' not found")


def features_of(frame: Any, features: Sequence[str] | None, roles: Sequence[str]) -> list[str]:
    """The features searched: those given, else every column not in `roles`."""
    return list(features) if features else [c for c in frame.columns if c not in roles]


def usable(frames: Sequence[Any], features: Sequence[str]) -> tuple[list[str], list[str]]:
    """(features with a value in some frame, the skipped ones with why)."""
    keep, skipped = [], []
    for col in features:
        if any(frame[col].notna().any() for frame in frames):
            keep.append(col)
        else:
            skipped.append(f"{col}: every value missing")
    return keep, skipped


def too_few(n: int, sigma: int, features: Sequence[str]) -> str | None:
    """Why `n` rows cannot be searched, or None."""
    if n == 0:
        return "no rows"
    if not features:
        return "no features to search"
    if n < 2 * sigma:
        return f"{n} rows: fewer than twice the minimum support ({sigma})"
    return None
