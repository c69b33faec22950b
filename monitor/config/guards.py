"""Config of the release gate (read by `guards` and `modelwatch gate`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator

from monitor.config._base import StrictModel
from monitor.config._durations import Duration


class GatePolicyConfig(StrictModel):
    """Overrides of one preset's thresholds; unset keys keep the preset's value."""

    atol: float | None = Field(default=None, ge=0)
    rtol: float | None = Field(default=None, ge=0)
    max_mismatch_fraction: float | None = Field(default=None, ge=0, le=1)
    max_abs: float | None = Field(default=None, ge=0)
    max_flip_rate: float | None = Field(default=None, ge=0, le=1)
    max_slice_flip_rate: float | None = Field(default=None, ge=0, le=1)
    max_metric_drop: float | None = Field(default=None, ge=0)
    max_slice_metric_drop: float | None = Field(default=None, ge=0)
    min_topk_overlap: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=1)
    decision_threshold: float | None = Field(default=None, ge=0, le=1)
    latency_budget_ms: float | None = Field(default=None, gt=0)
    max_latency_ratio: float | None = Field(default=None, gt=0)
    min_slice_rows: int | None = Field(default=None, ge=1)
    confidence: float | None = Field(default=None, gt=0.5, lt=1)
    localize_tolerance: float | None = Field(default=None, gt=0)


class GoldenSetConfig(StrictModel):
    """A golden set for gate runs started over HTTP (`POST /v1/guard/.../run`); requests name
    it, and the daemon alone knows its path."""

    path: str = Field(min_length=1)
    preset: Literal["fp32", "fp16", "int8"] = "fp32"
    label_column: str | None = None
    id_column: str | None = None
    slice_by: list[str] = Field(default_factory=list)
    features: list[str] | None = None
    output: str | None = None


class LocalizeConfig(StrictModel):
    """Layer localisation in `modelwatch gate` (`--localize` runs it on any verdict)."""

    # Run it by itself when the verdict is fail.
    on_fail: bool = True
    # Stop replaying rows once this much time is spent (at least one batch always runs).
    budget: Duration = Field(default=timedelta(seconds=30))
    max_rows: int = Field(default=2048, ge=1)

    @field_validator("budget")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be a positive duration, e.g. 30s")
        return value


class GuardsConfig(StrictModel):
    """The gate's runtime settings and per-preset threshold overrides."""

    presets: dict[Literal["fp32", "fp16", "int8"], GatePolicyConfig] = Field(default_factory=dict)
    # Explicit execution providers; empty = TensorRT, CUDA (when a GPU is usable), then CPU.
    providers: list[str] = Field(default_factory=list)
    batch_size: int = Field(default=4096, ge=1)
    latency_batch_sizes: list[int] = Field(default_factory=lambda: [1, 64])
    intra_op_threads: int = Field(default=0, ge=0)
    # Golden sets by name; a gate run request names one (default: the model's name).
    golden_sets: dict[str, GoldenSetConfig] = Field(default_factory=dict)
    localize: LocalizeConfig = Field(default_factory=LocalizeConfig)
