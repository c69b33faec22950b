"""Judgements the daemon makes on its own schedule: declared canary pairs and skew checks."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator, model_validator

from monitor.config._base import StrictModel
from monitor.config._durations import Duration

Correction = Literal["benjamini_hochberg", "holm", "none"]


def _printable(value: str) -> str:
    if not value.isprintable():
        raise ValueError("must not contain control characters")
    return value


class CanaryPairConfig(StrictModel):
    """A canary version judged against its stable version by the daemon, overall and per slice.

    Every `interval` the daemon reads both versions' mergeable summaries of the last `since`,
    judges each canary criterion overall and in each slice of the model's `slices` (the
    thresholds of the model's `canary` settings), corrects the p-values of all those tests
    together (`correction`), stores the verdict with its history and emits `canary` signals.
    """

    model: str = Field(min_length=1, max_length=200, description="A configured model's name.")
    canary: str = Field(
        min_length=1, max_length=100, description="The canary version (the new one)."
    )
    stable: str = Field(
        min_length=1, max_length=100, description="The stable version it is compared with."
    )
    since: Duration = Field(
        default=timedelta(hours=1),
        description="How far back each evaluation reads both versions' windows (`1h`, `30m`).",
    )
    interval: Duration = Field(
        default=timedelta(minutes=5),
        description="How often the daemon evaluates the pair (`5m`); at least 1 second.",
    )
    correction: Correction = Field(
        default="benjamini_hochberg",
        description=(
            "Multiple-testing correction over every slice × criterion test of one evaluation: "
            "`benjamini_hochberg` bounds the false discovery rate by `level`, `holm` the "
            "chance of any false failure by `level`, `none` judges each test alone."
        ),
    )
    level: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description=(
            "The corrected p-value a tested criterion (distributions, error rate) must be "
            "below to fail; a criterion that passes its own test never fails by correction."
        ),
    )
    max_slices: int = Field(
        default=50,
        ge=0,
        le=1000,
        description=(
            "Slices judged per evaluation, those with the most stable traffic first (0: the "
            "whole traffic only)."
        ),
    )
    rollback: bool = Field(
        default=False,
        description=(
            "A failed verdict of an active canary moves `active` back to `stable`, only if "
            "that is a rollback target (registered, artifact hash verified, passing gate)."
        ),
    )

    _model_name = field_validator("model", "canary", "stable")(_printable)

    @model_validator(mode="after")
    def _two_versions(self) -> CanaryPairConfig:
        if self.canary == self.stable:
            raise ValueError(f"canary and stable are both version {self.canary!r}")
        if self.interval.total_seconds() < 1 or self.since.total_seconds() < 1:
            raise ValueError("since and interval must be at least 1 second")
        return self

    @property
    def key(self) -> str:
        """How job items, logs and failures name the pair."""
        return f"{self.model}/{self.canary}:{self.stable}"


class FeatureSourceConfig(StrictModel):
    """Rows of features keyed by an entity: a Parquet file or directory, or a SQL query."""

    path: str | None = Field(
        default=None, min_length=1, description="A Parquet file or a directory of them."
    )
    sql: str | None = Field(
        default=None, min_length=1, description="A SQL query returning the key and features."
    )
    url_env: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "The environment variable holding the SQLAlchemy URL `sql` runs on (a secret: "
            "never in the file)."
        ),
    )
    max_rows: int = Field(
        default=1_000_000, ge=1, description="More rows than this fail the check (its cost)."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> FeatureSourceConfig:
        if (self.path is None) == (self.sql is None):
            raise ValueError("give exactly one of path or sql")
        if self.sql is not None and self.url_env is None:
            raise ValueError("sql needs url_env (the variable holding the database URL)")
        return self

    @property
    def name(self) -> str:
        """How signals and failures name the source (never the URL)."""
        if self.path is not None:
            return self.path
        return f"sql via ${self.url_env}"


class SkewCheckConfig(StrictModel):
    """Training-serving skew on a schedule: serving and offline rows joined by `key`."""

    name: str = Field(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="The check's name (a label of its signals and gauges).",
    )
    model: str = Field(min_length=1, max_length=200, description="A configured model's name.")
    key: str = Field(min_length=1, description="The entity key column, unique on each side.")
    serving: FeatureSourceConfig = Field(description="Features as the model saw them.")
    offline: FeatureSourceConfig = Field(description="Features as the offline store has them.")
    columns: list[str] = Field(
        default_factory=list, description="Features compared; empty: every shared column."
    )
    rtol: float = Field(default=1e-6, ge=0, description="Relative tolerance (numeric values).")
    atol: float = Field(default=1e-9, ge=0, description="Absolute tolerance (numeric values).")
    threshold: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="A feature whose mismatch rate is above this fires its `skew` signal.",
    )
    interval: Duration = Field(
        default=timedelta(hours=1), description="How often the check runs (`1h`)."
    )

    _model_name = field_validator("model", "key")(_printable)

    @field_validator("interval")
    @classmethod
    def _at_least_a_second(cls, value: timedelta) -> timedelta:
        if value.total_seconds() < 1:
            raise ValueError("must be at least 1 second")
        return value
