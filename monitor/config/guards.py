"""Config of the release gate (read by `guards` and `modelwatch gate`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator, model_validator

from monitor.config._base import StrictModel
from monitor.config._durations import Duration


class GatePolicyConfig(StrictModel):
    """Overrides of one preset's thresholds; unset keys keep the preset's value."""

    atol: float | None = Field(
        default=None,
        ge=0,
        description=(
            "Absolute tolerance of the elementwise comparison `|c - r| <= atol + rtol * |r|`."
        ),
    )
    rtol: float | None = Field(
        default=None, ge=0, description="Relative tolerance of the elementwise comparison."
    )
    max_mismatch_fraction: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Largest share of elements outside the tolerance (`allclose`).",
    )
    max_abs: float | None = Field(
        default=None,
        ge=0,
        description="Largest absolute difference of any output element (`max_abs`).",
    )
    max_flip_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Largest share of rows whose top-1 class or decision flips, overall.",
    )
    max_slice_flip_rate: float | None = Field(
        default=None, ge=0, le=1, description="Largest flip rate in any slice."
    )
    max_metric_drop: float | None = Field(
        default=None,
        ge=0,
        description="Largest task-metric drop overall (points; percent for error metrics).",
    )
    max_slice_metric_drop: float | None = Field(
        default=None, ge=0, description="Largest task-metric drop in any slice."
    )
    min_topk_overlap: float | None = Field(
        default=None, ge=0, le=1, description="Smallest mean overlap of the top-k classes."
    )
    top_k: int | None = Field(default=None, ge=1, description="k of the top-k overlap.")
    decision_threshold: float | None = Field(
        default=None, ge=0, le=1, description="Score at which a binary output's decision flips."
    )
    latency_budget_ms: float | None = Field(
        default=None,
        gt=0,
        description="Candidate p95 latency at the largest timed batch size at most this.",
    )
    max_latency_ratio: float | None = Field(
        default=None, gt=0, description="Candidate p95 / reference p95 at most this."
    )
    min_slice_rows: int | None = Field(
        default=None,
        ge=1,
        description="A criterion on fewer rows is `inconclusive` unless its breach is certain.",
    )
    confidence: float | None = Field(
        default=None,
        gt=0.5,
        lt=1,
        description="Confidence with which a small slice's breach must be shown to fail.",
    )
    localize_tolerance: float | None = Field(
        default=None,
        gt=0,
        description="Relative error past which layer localisation calls a tensor divergent.",
    )


class GoldenSetConfig(StrictModel):
    """A golden set for gate runs started over HTTP (`POST /v1/guard/.../run`); requests name
    it, and the daemon alone knows its path."""

    path: str = Field(min_length=1, description="The golden set's file on the daemon's host.")
    preset: Literal["fp32", "fp16", "int8"] = Field(
        default="fp32", description="Gate preset: `fp32`, `fp16` or `int8`."
    )
    label_column: str | None = Field(default=None, description="Label column for task metrics.")
    id_column: str | None = Field(default=None, description="Row id column (named in worst rows).")
    slice_by: list[str] = Field(
        default_factory=list, description="Columns whose values are gated as slices."
    )
    features: list[str] | None = Field(
        default=None,
        description="Feature columns in input order; null: every other column, in file order.",
    )
    output: str | None = Field(
        default=None,
        description=(
            "The model output task criteria use; null: the first class-score "
            "output, else the first."
        ),
    )
    sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description=(
            "The file's expected sha256 (lowercase hex); a scheduled replay of a file that "
            "hashes otherwise fails, naming the file. null: not checked."
        ),
    )


class LocalizeConfig(StrictModel):
    """Layer localisation in `modelwatch gate` (`--localize` runs it on any verdict)."""

    # Run it by itself when the verdict is fail.
    on_fail: bool = Field(
        default=True, description="Run layer localisation by itself when the verdict is `fail`."
    )
    # Stop replaying rows once this much time is spent (at least one batch always runs).
    budget: Duration = Field(
        default=timedelta(seconds=30),
        description="Stop replaying rows once this much time is spent (one batch always runs).",
    )
    max_rows: int = Field(
        default=2048, ge=1, description="Golden rows replayed, the failing slice's first."
    )

    @field_validator("budget")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be a positive duration, e.g. 30s")
        return value


class GuardScheduleConfig(StrictModel):
    """A model's scheduled golden replay (`guards.schedule.<model>`): the daemon replays the
    golden set through the reference and the replayed versions on its own host, every `every`."""

    golden_set: str | None = Field(
        default=None,
        min_length=1,
        description="Name of the golden set in `guards.golden_sets`; null: the model's name.",
    )
    preset: Literal["fp32", "fp16", "int8"] | None = Field(
        default=None, description="Gate preset; null: the golden set's."
    )
    thresholds: GatePolicyConfig | None = Field(
        default=None, description="Overrides of the preset's thresholds (after `guards.presets`)."
    )
    reference_version: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "Registered version holding the reference model; null: last-known-good, else "
            "the active version (other than the one replayed)."
        ),
    )
    every: Duration = Field(
        default=timedelta(hours=1), description="How often the replay runs, e.g. `1h`."
    )
    versions: Literal["active", "candidates"] = Field(
        default="active",
        description=(
            "`active`: the active version; `candidates`: also each registered version newer "
            "than it (at most `max_versions` in all, newest candidates first)."
        ),
    )
    max_versions: int = Field(
        default=5, ge=1, le=50, description="Most versions replayed per run (the active first)."
    )
    action: Literal["none", "rollback"] = Field(
        default="none",
        description=(
            "`rollback`: a failing replay of the active version moves `active` to "
            "last-known-good (`guards.registry.rollback_target`); `none`: only signals."
        ),
    )
    time_budget: Duration = Field(
        default=timedelta(minutes=4),
        description=(
            "Wall time one run may take, all its versions together; a replay still running "
            "then is killed and recorded as a failed item, and the versions left wait for the "
            "next run. Shorter than `scheduler.lease_s`."
        ),
    )
    latency: bool = Field(
        default=False,
        description="Also time the models (`guards.latency_batch_sizes`); costs replay time.",
    )
    threads: int = Field(
        default=1,
        ge=0,
        le=256,
        description=(
            "ONNX Runtime intra-op threads of the replay (both models); 1 keeps it to one core "
            "beside ingest; 0: `guards.intra_op_threads`."
        ),
    )

    @field_validator("every", "time_budget")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value < timedelta(seconds=1):
            raise ValueError("must be at least 1s, e.g. 1h")
        return value


class GuardsConfig(StrictModel):
    """The gate's runtime settings and per-preset threshold overrides."""

    presets: dict[Literal["fp32", "fp16", "int8"], GatePolicyConfig] = Field(
        default_factory=dict, description="Per-preset overrides of any policy field."
    )
    # Explicit execution providers; empty = TensorRT, CUDA (when a GPU is usable), then CPU.
    providers: list[str] = Field(
        default_factory=list,
        description=(
            "Explicit ONNX Runtime execution providers; empty: TensorRT, CUDA "
            "(when a GPU is usable), then CPU."
        ),
    )
    batch_size: int = Field(
        default=4096, ge=1, description="Rows per inference call when replaying the golden set."
    )
    latency_batch_sizes: list[int] = Field(
        default_factory=lambda: [1, 64],
        description="Batch sizes timed (p50/p95/p99, rows/s); `--batch-size` overrides.",
    )
    intra_op_threads: int = Field(
        default=0,
        ge=0,
        description="ONNX Runtime intra-op threads for both models; 0: its default.",
    )
    # Golden sets by name; a gate run request names one (default: the model's name).
    golden_sets: dict[str, GoldenSetConfig] = Field(
        default_factory=dict, description="Golden sets by name, for gate runs over HTTP."
    )
    localize: LocalizeConfig = Field(
        default_factory=LocalizeConfig, description="Layer localisation in `modelwatch gate`."
    )
    schedule: dict[str, GuardScheduleConfig] = Field(
        default_factory=dict,
        description=(
            "Scheduled golden replays by model name (a configured model): the daemon's "
            "`guard:<model>` job."
        ),
    )

    @model_validator(mode="after")
    def _known_golden_sets(self) -> GuardsConfig:
        for model, entry in self.schedule.items():
            name = entry.golden_set or model
            if name not in self.golden_sets:
                known = ", ".join(sorted(self.golden_sets)) or "none"
                raise ValueError(
                    f"schedule.{model}.golden_set: no golden set named {name!r} in "
                    f"guards.golden_sets; configured: {known}"
                )
        return self
