"""Config of the daemon: HTTP API, tokens and scheduled jobs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from pydantic import Field, model_validator

from monitor.config._base import StrictModel
from monitor.errors import ConfigError

Scope = Literal["ingest", "read", "admin"]
_YEAR_S = 366 * 86400


class TokenConfig(StrictModel):
    """A bearer token and what it may do; the secret comes from `token_env` (or `token`)."""

    name: str = Field(
        min_length=1,
        description="The token's name (shown in 403 answers and logs, never the secret).",
    )
    scopes: list[Scope] = Field(
        min_length=1,
        description="What the token may do: `ingest`, `read`, `admin` (admin implies all).",
    )
    token_env: str | None = Field(
        default=None,
        description=(
            "Environment variable holding the secret; `serve` refuses to start (exit 2) while "
            "it is unset or empty, other commands do not read it."
        ),
    )
    token: str | None = Field(
        default=None,
        repr=False,
        description="The secret itself (prefer `token_env`); exactly one of the two.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> TokenConfig:
        if (self.token_env is None) == (self.token is None):
            raise ValueError(f"token '{self.name}': set exactly one of token_env or token")
        return self

    def secret(self) -> str | None:
        """The token value, read from the environment when configured so."""
        if self.token is not None:
            return self.token
        assert self.token_env is not None
        return os.environ.get(self.token_env) or None


class CloudEventsOptions(StrictModel):
    """How `POST /v1/events` reads inference-logger CloudEvents (the `cloudevents` adapter)."""

    # Default: the event's `inferenceservicename` / `modelversion` extensions.
    model: str | None = Field(
        default=None,
        description=(
            "Model of every CloudEvent; null: the event's `inferenceservicename` extension."
        ),
    )
    model_version: str | None = Field(
        default=None,
        description=(
            "Version of every CloudEvent; null: the `modelversion` extension, else `unknown`."
        ),
    )
    # Names of positional inputs (V1 `instances` lists); default f0, f1, ...
    feature_names: list[str] = Field(
        default_factory=list,
        description="Names of positional inputs (V1 `instances` lists); empty: `f0`, `f1`, ...",
    )


class ApiConfig(StrictModel):
    """`modelwatch serve`'s HTTP API."""

    host: str = Field(default="127.0.0.1", description="Address the API listens on.")
    port: int = Field(default=8080, ge=0, le=65535, description="Port the API listens on.")
    tokens: list[TokenConfig] = Field(
        default_factory=list,
        description="Bearer tokens; with none configured every `/v1` endpoint answers 401.",
    )
    max_body_bytes: int = Field(
        default=10 * 1024 * 1024, ge=1024, description="Larger request bodies are answered 413."
    )
    # Slow and greedy peers (monitor/app/daemon/_http.py): enforced before authentication.
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description=(
            "A connection that has not sent a complete request head this many seconds after "
            "it opened (or after its previous response) is closed."
        ),
    )
    max_header_bytes: int = Field(
        default=32 * 1024,
        ge=1024,
        le=1024 * 1024,
        description="A request line plus headers larger than this is answered 431.",
    )
    max_connections: int = Field(
        default=1000,
        ge=1,
        description=(
            "Open connections at most; lowered to leave a quarter of the open-files limit "
            "(`ulimit -n`, at least 64) free. Over it, the oldest connection still waiting for "
            "its request head is closed (or the new one answered 503)."
        ),
    )
    keep_alive_timeout_s: int = Field(
        default=5,
        ge=1,
        le=300,
        description="An idle kept-alive connection is closed after this many seconds.",
    )
    # Health and metrics stay open for probes and scrapers unless this is set.
    protect_health: bool = Field(
        default=False,
        description="Require a read token for `/healthz`, `/readyz` and `/metrics` too.",
    )
    cloudevents: CloudEventsOptions = Field(
        default_factory=CloudEventsOptions,
        description="How `POST /v1/events` reads KServe/Seldon inference-logger CloudEvents.",
    )

    def check_token_env(self, environ: Mapping[str, str], source: str = "<config>") -> None:
        """ConfigError naming the first `token_env` that is unset or empty in `environ`.

        Only the API reads the tokens, so only `serve` calls this, before it listens: an unset
        variable would silently drop its token and lock its users out. Commands that never
        answer HTTP run without the secrets.
        """
        for i, token in enumerate(self.tokens):
            if token.token_env is not None and not environ.get(token.token_env):
                raise ConfigError(
                    f"{source}: invalid value for 'api.tokens[{i}].token_env': environment "
                    f"variable {token.token_env} is not set (or is empty)"
                )


class SchedulerConfig(StrictModel):
    """Intervals of the daemon's scheduled jobs (seconds), bounded so that no date arithmetic
    on them can overflow."""

    evaluate_interval_s: float = Field(
        default=60.0,
        gt=0,
        le=_YEAR_S,
        allow_inf_nan=False,
        description="Seconds between window evaluations (drift, outcomes, estimates, SLOs).",
    )
    tick_offset_s: float = Field(
        default=2.0,
        ge=0,
        le=3600,
        allow_inf_nan=False,
        description=(
            "Scheduled jobs run on their interval's grid of the clock (a 10 s job at :00, :10, "
            "...) shifted by this many seconds (at most half the interval), so an evaluation "
            "runs just after each window ends and its last events are aggregated."
        ),
    )

    def offset_s(self, interval_s: float) -> float:
        """The tick offset of a job run every `interval_s` seconds (`offset_within`)."""
        return self.offset_within(self.tick_offset_s, interval_s)

    @staticmethod
    def offset_within(offset_s: float, interval_s: float) -> float:
        """A tick offset of a job run every `interval_s` seconds: at most half of it."""
        return min(offset_s, interval_s / 2)

    results_refresh_s: float = Field(
        default=300.0,
        ge=0,
        le=_YEAR_S,
        allow_inf_nan=False,
        description=(
            "Alert signals and gauges of a model's window results (drift, outcomes, "
            "estimates, fairness, serving) are read again when the model was evaluated in "
            "this evaluation tick or the one before, and for every model at least this often "
            "(results stored by another process are seen by then); 0: every model every tick."
        ),
    )
    alerts_interval_s: float = Field(
        default=15.0,
        gt=0,
        le=_YEAR_S,
        allow_inf_nan=False,
        description="Seconds between alert evaluations and metric refreshes.",
    )
    retention_interval_s: float = Field(
        default=3600.0,
        gt=0,
        le=_YEAR_S,
        allow_inf_nan=False,
        description="Seconds between runs of the retention job.",
    )
    retention_days: int = Field(
        default=90,
        ge=1,
        le=36_500,
        description=(
            "Windows, results, dead letters and finished notifications older than this are deleted."
        ),
    )
    # Raw joined predictions are drill-down data only (outcome metrics come from summaries),
    # so they may be kept for a shorter time; at most `retention_days`.
    labeled_retention_days: int | None = Field(
        default=14,
        ge=1,
        le=36_500,
        description=(
            "Raw joined predictions (drill-down only) are kept this long; null: `retention_days`."
        ),
    )
    # A job claimed by a replica that died is taken over after this long.
    lease_s: float = Field(
        default=300.0,
        gt=0,
        le=_YEAR_S,
        allow_inf_nan=False,
        description=(
            "A job run claimed by a replica that died is taken over after this many seconds; "
            "on PostgreSQL, a dead replica's evaluation unit within two thirds of it."
        ),
    )
    # On PostgreSQL, how many evaluation units one replica's worker runs at once.
    units_at_once: int = Field(
        default=2,
        ge=1,
        le=32,
        description=(
            "On PostgreSQL, evaluation units (one model's changed windows each) a replica runs "
            "at once, each on its own thread and database connection: a unit waits on the "
            "database for about half its time."
        ),
    )
    # A failing item of a job (a window, a model) is retried after retry_initial_s, doubling
    # per failure up to retry_max_s; after `failing_after` failures in a row /readyz reports it.
    retry_initial_s: float = Field(
        default=30.0,
        gt=0,
        le=_YEAR_S,
        allow_inf_nan=False,
        description=(
            "A failing job item (a window, a model) is retried after this many "
            "seconds, doubling per failure."
        ),
    )
    retry_max_s: float = Field(
        default=3600.0,
        gt=0,
        le=_YEAR_S,
        allow_inf_nan=False,
        description="The longest wait between retries of a failing item.",
    )
    # A supervised component (a delivery worker, a source, the intake drain process, the
    # scheduler's thread) that dies is restarted after restart_initial_s, doubling per death
    # in a row up to restart_max_s.
    restart_initial_s: float = Field(
        default=1.0,
        gt=0,
        le=3600,
        allow_inf_nan=False,
        description=(
            "A supervised component that dies (a delivery worker, a source, the intake drain "
            "process, the scheduler's thread) is restarted after this many seconds, doubling "
            "per death in a row."
        ),
    )
    restart_max_s: float = Field(
        default=60.0,
        gt=0,
        le=_YEAR_S,
        allow_inf_nan=False,
        description="The longest wait before restarting a component that keeps dying.",
    )
    failing_after: int = Field(
        default=3,
        ge=1,
        le=1_000_000,
        description="Failures in a row before `/readyz` reports the item (503).",
    )
    # Service managers wait this long after SIGTERM before SIGKILL (systemd 90 s, Kubernetes
    # 30 s by default); the default leaves room under both.
    shutdown_grace_s: float = Field(
        default=10.0,
        ge=5,
        le=600,
        allow_inf_nan=False,
        description=(
            "Seconds from SIGTERM/SIGINT until `serve` has exited: requests in flight finish "
            "(up to 3 s), then the intake drain flushes, components and running jobs stop, "
            "all within this budget; what is not done by then is abandoned (nothing "
            "acknowledged is lost: it waits in the intake log for the next start)."
        ),
    )
    # Open days and weeks are re-tested while their windows change; at fleet scale every tick
    # would redo each model's day (monitor.evaluation.period_jobs), so at most this often.
    period_interval_s: float | None = Field(
        default=None,
        ge=0,
        le=_YEAR_S,
        allow_inf_nan=False,
        description=(
            "A day or week that has not ended is re-evaluated at most once per this many "
            "seconds while its windows change (0: every evaluation); one that has ended is "
            "evaluated at once. Null: 1 s per model, up to 900, and 0 while that is not "
            "more than `evaluate_interval_s` (small deployments see every change at once)."
        ),
    )
    # Open windows likewise: thin traffic changes every model's open window on every tick, and
    # re-evaluating each of them every tick was most of a 1,000-model fleet's evaluation.
    open_window_interval_s: float | None = Field(
        default=None,
        ge=0,
        le=_YEAR_S,
        allow_inf_nan=False,
        description=(
            "A window that has not ended is re-evaluated at most once per this many seconds "
            "while its profiles change (0: every evaluation); one that has ended is evaluated "
            "at the next evaluation. Null: 0.25 s per model, up to 300, and 0 while that is "
            "not more than `evaluate_interval_s`."
        ),
    )
    reference_cache: int = Field(
        default=1000,
        ge=1,
        le=1_000_000,
        description=(
            "Decoded baselines the evaluation keeps between ticks (least recently used "
            "dropped); each is checked against its stored row every tick, so a replaced "
            "baseline is used at the next one."
        ),
    )
