"""Serving SLOs and live canary analysis settings of a model."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator, model_validator

from monitor.common.measures import MEASURES, objective_of
from monitor.config._base import StrictModel
from monitor.config._durations import Duration
from monitor.config._names import DriftMethod


class CostConfig(StrictModel):
    """Cost per 1,000 predictions, charged to the version and slice that caused it.

    A version registered with its own `hourly_price` (and `replicas`) costs that per hour; the
    fleet here (`hourly_price × replicas`) is shared by the other versions in proportion to their
    requests in the window. A slice is charged its version's cost in proportion to its requests
    (`share: requests`) or to its summed latency (`share: compute_time`). Cost per 1,000 =
    hourly cost × hours elapsed in the window / requests × 1,000.
    """

    hourly_price: float = Field(
        gt=0, allow_inf_nan=False, description="Price of one replica per hour (dollars)."
    )
    replicas: int = Field(
        default=1,
        ge=1,
        description=(
            "Replicas serving the model's versions that have no price of their own in the "
            "registry (`models register --hourly-price --replicas`)."
        ),
    )
    share: Literal["requests", "compute_time"] = Field(
        default="requests",
        description=(
            "How a version's cost is shared among its slices: by requests, or by summed "
            "latency (`model_latency_ms` where events carry it, else `latency_ms`)."
        ),
    )
    # The SLO: cost per 1,000 predictions at most this (None: reported without a verdict).
    max: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description=(
            "The objective: cost per 1,000 predictions at most this; null: "
            "reported without a verdict."
        ),
    )


class TokenCostConfig(StrictModel):
    """Cost per 1,000 tokens (input + output) of a generative model.

    Priced per token (`input_price`/`output_price` per 1,000 tokens), or per hour: without a
    per-token price the version's hourly cost (`cost_per_1k`'s basis: its own registered price,
    else its share of the fleet) is divided by the tokens of the window.
    """

    input_price: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="Dollars per 1,000 input tokens."
    )
    output_price: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="Dollars per 1,000 output tokens."
    )
    max: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="The objective: at most this per 1,000 tokens; null: reported only.",
    )


class SloConfig(StrictModel):
    """Serving objectives of a model; percentiles, never averages, decide latency."""

    latency_p95_ms: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="95th percentile of `latency_ms` at most this (milliseconds).",
    )
    latency_p99_ms: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="99th percentile of `latency_ms` at most this (milliseconds).",
    )
    error_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="Errored requests / all requests at most this.",
    )
    min_rps: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description=(
            "Requests per second over the part of the window that has passed, at least this."
        ),
    )
    cost_per_1k: CostConfig | None = Field(
        default=None, description="Dollars per 1,000 predictions at the window's request rate."
    )
    measures: dict[str, float] = Field(
        default_factory=dict,
        description=(
            "Objectives on per-event measures, `<measure>_<stat>[_<unit>]: bound` with stat "
            "min, p5, p50, p95, p99 or max (e.g. `ttft_p95_ms: 500`, `tpot_p95_ms: 50`, "
            "`gpu_memory_max_mb: 70000`; `tokens_per_s_p5: 20` is a lower bound: higher is "
            "better). Judged like latency: `insufficient_data` below `min_events` samples."
        ),
    )
    cost_per_1k_tokens: TokenCostConfig | None = Field(
        default=None,
        description="Dollars per 1,000 tokens (input and output) of a generative model.",
    )
    # Fewer requests in a window (and slice) than this: `insufficient_data`.
    min_events: int = Field(
        default=100,
        ge=1,
        description=(
            "Fewer requests in a window (and slice): `insufficient_data` for "
            "latency and error rate."
        ),
    )

    @field_validator("measures")
    @classmethod
    def _known_objectives(cls, value: dict[str, float]) -> dict[str, float]:
        for name, bound in value.items():
            objective_of(name)  # ValueError naming the unknown objective
            if not 0 <= bound < float("inf"):
                raise ValueError(f"{name}: the bound must be a finite number >= 0")
        return value

    @model_validator(mode="after")
    def _token_cost_basis(self) -> SloConfig:
        tokens = self.cost_per_1k_tokens
        if tokens is not None and tokens.input_price is None and tokens.output_price is None:
            if self.cost_per_1k is None:
                raise ValueError(
                    "cost_per_1k_tokens: give input_price/output_price, or cost_per_1k "
                    "(its hourly price is then divided by the window's tokens)"
                )
        return self


class CanaryConfig(StrictModel):
    """How a canary version's live traffic is judged against the stable version's."""

    # Distribution distance of predictions and features (on the stable version's specs).
    method: DriftMethod = Field(
        default="psi",
        description=(
            "Distribution distance of predictions and features, on the stable version's specs."
        ),
    )
    threshold: float = Field(
        default=0.1,
        gt=0,
        allow_inf_nan=False,
        description="A distance above this (and p < `drift.alpha`) fails.",
    )
    # Canary latency p95/p99 may be at most this many times the stable version's.
    latency_ratio: float = Field(
        default=1.2,
        ge=1,
        allow_inf_nan=False,
        description="Canary p95/p99 latency may be at most this many times the stable version's.",
    )
    # Significance of the one-sided tests: the error rates' two-proportion test, each outcome
    # metric's shortfall beyond `metric_tolerance`.
    alpha: float = Field(
        default=0.01,
        gt=0,
        lt=1,
        description=(
            "Significance of the one-sided tests: the two-proportion test of the error rates "
            "and each outcome metric's shortfall beyond `metric_tolerance`."
        ),
    )
    # Minimum evidence per criterion, each version: events (and latency samples), labels.
    min_events: int = Field(
        default=100,
        ge=1,
        description=(
            "Events per version and criterion needed for a verdict, else `insufficient_data`."
        ),
    )
    min_labels: int = Field(
        default=100, ge=1, description="Labels per version needed for the outcome criteria."
    )
    # The largest outcome-metric drop (canary below stable) that passes: a canary fails only
    # when its drop is beyond this at confidence 1 - alpha.
    metric_tolerance: float = Field(
        default=0.02,
        ge=0,
        allow_inf_nan=False,
        description=(
            "The largest outcome-metric drop (canary below stable) that passes: the criterion "
            "fails only when the drop exceeds it at one-sided confidence 1 - `alpha`."
        ),
    )
    # `rollback`: the admin POST .../apply moves a failed active canary back (never the GET).
    action: Literal["notify", "rollback"] = Field(
        default="notify",
        description=(
            "`rollback`: `POST /v1/canary/{model}/{canary}/apply` (admin) or `modelwatch "
            "canary --apply` moves a failed canary that is the active version back to the "
            "stable one, if that is a verified known-good version; the GET never acts."
        ),
    )


class ResourceScrapeConfig(StrictModel):
    """Resource samples of one replica, scraped from its Prometheus text endpoint.

    Every `interval` the daemon reads `url` (a DCGM exporter's, vLLM's or NIM's `/metrics`) and
    adds each configured metric's sample values (every series of it: one per GPU, say) to the
    resource measures of `version`'s current window (whole window, no slice), beside what events
    carry. A sample that is negative or not finite is skipped; a failed scrape is a failure of
    the job (`modelwatch_job_failures_total`) and tried again at the next interval.
    """

    url: str = Field(
        description="The endpoint (http:// or https://), e.g. `http://gpu0:9400/metrics`."
    )
    version: str = Field(
        min_length=1, max_length=100, description="The model version this replica serves."
    )
    metrics: dict[str, str] = Field(
        description=(
            "Resource measure → metric name in the exposition, e.g. `gpu_utilization_percent: "
            "DCGM_FI_DEV_GPU_UTIL`, `queue_depth: 'vllm:num_requests_waiting'`; values are "
            "taken in the measure's unit."
        ),
    )
    interval: Duration = Field(default=timedelta(seconds=15), description="Time between scrapes.")
    timeout: Duration = Field(default=timedelta(seconds=5), description="Per scrape, at most.")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {value[:100]!r}")
        return value

    @field_validator("metrics")
    @classmethod
    def _resource_measures(cls, value: dict[str, str]) -> dict[str, str]:
        if not value:
            raise ValueError("name at least one measure to scrape")
        resources = [m.name for m in MEASURES.values() if m.kind == "resource"]
        for name in value:
            if name not in resources:
                raise ValueError(
                    f"{name!r} is not a resource measure; valid: {', '.join(resources)}"
                )
        return value

    @field_validator("interval", "timeout")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value < timedelta(seconds=1):
            raise ValueError("must be at least 1s")
        return value
