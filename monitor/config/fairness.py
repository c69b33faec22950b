"""Fairness settings of a model: its protected attributes, reference groups and thresholds."""

from __future__ import annotations

from types import MappingProxyType
from typing import Literal

from pydantic import Field, field_validator, model_validator

from monitor.config._base import StrictModel


class FairnessThresholds(StrictModel):
    """Bounds a fairness metric is judged against (see docs/concepts/fairness.md)."""

    max_difference: float = Field(
        default=0.1,
        gt=0,
        lt=1,
        description=(
            "Largest tolerated difference of rates between groups: demographic parity "
            "(selection rate), equal opportunity (TPR) and equalized odds (TPR and FPR)."
        ),
    )
    min_ratio: float = Field(
        default=0.8,
        gt=0,
        lt=1,
        description="Smallest tolerated ratio of selection rates (disparate impact).",
    )
    max_calibration_error: float = Field(
        default=0.1,
        gt=0,
        lt=1,
        description="Largest tolerated |observed positive rate - mean score| of a group.",
    )


PRESETS: MappingProxyType[str, FairnessThresholds] = MappingProxyType(
    {
        # The four-fifths rule of the US EEOC Uniform Guidelines (29 CFR 1607.4 D): a selection
        # rate under 80% of another group's is evidence of adverse impact.
        "four_fifths": FairnessThresholds(
            max_difference=0.1, min_ratio=0.8, max_calibration_error=0.1
        ),
    }
)


class FairnessConfig(StrictModel):
    """Fairness metrics per protected attribute, computed in each labelled window.

    Each attribute must also be one of the model's `slices`: its groups are that slice
    column's values, counted in the window's outcome summaries.
    """

    attributes: list[str] = Field(
        min_length=1,
        description="Protected attributes (slice columns) whose groups are compared.",
    )
    reference_group: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Per attribute, the group every other group is compared with; an attribute "
            "without one compares every pair of groups."
        ),
    )
    thresholds: Literal["four_fifths"] | FairnessThresholds = Field(
        default="four_fifths",
        description=(
            "A preset (`four_fifths`: ratio 0.8, difference 0.1, calibration error 0.1) or "
            "explicit bounds."
        ),
    )
    alpha: float = Field(
        default=0.05,
        gt=0,
        lt=0.5,
        description=(
            "False-alarm rate promised per metric, attribute and window: a violation needs "
            "the whole simultaneous (1 - alpha) interval beyond the bound."
        ),
    )
    min_group_n: int = Field(
        default=30,
        ge=2,
        description=(
            "Fewer supporting rows than this (rows; actual positives for TPR; actual "
            "negatives for FPR): the group is left out of the comparison."
        ),
    )
    max_groups: int = Field(
        default=20,
        ge=2,
        le=100,
        description="Groups compared per attribute: the largest; the rest are left out.",
    )

    @field_validator("attributes")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("attributes must be unique")
        return value

    @model_validator(mode="after")
    def _references_named(self) -> FairnessConfig:
        unknown = sorted(set(self.reference_group) - set(self.attributes))
        if unknown:
            raise ValueError(
                f"reference_group: {', '.join(map(repr, unknown))} is not an attribute "
                f"(attributes: {', '.join(self.attributes)})"
            )
        return self

    def bounds(self) -> FairnessThresholds:
        """The thresholds in force: the preset's, or the explicit ones."""
        if isinstance(self.thresholds, str):
            return PRESETS[self.thresholds]
        return self.thresholds
