"""Paired shadow mode: how a shadow version's predictions are paired with the primary's."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, field_validator

from monitor.config._base import StrictModel
from monitor.config._durations import Duration


class ShadowConfig(StrictModel):
    """Pairs events of one request id (`role: primary` and `role: shadow`) and judges them."""

    pair_horizon: Duration = Field(
        default=timedelta(minutes=5),
        description=(
            "How long (event time) one side of a request waits for the other; past it the "
            "waiting side is counted as unpaired, never guessed."
        ),
    )
    max_flip_rate: float = Field(
        default=0.05,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description=(
            "A `shadow` signal fires when the Wilson 95% lower bound of the flip rate (pairs "
            "whose predicted class differs) exceeds this."
        ),
    )
    alpha: float = Field(
        default=0.01,
        gt=0,
        lt=1,
        description=(
            "Significance of McNemar's exact test on labelled correctness pairs; p below it "
            "fires a `shadow` signal."
        ),
    )
    min_pairs: int = Field(
        default=100,
        ge=1,
        description="Pairs (labelled pairs for McNemar) needed before a verdict is given.",
    )

    @field_validator("pair_horizon")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be a positive duration")
        return value
