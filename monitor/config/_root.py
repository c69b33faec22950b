"""The root config model and the loader that validates a YAML file once at startup."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from monitor.common.defaults import DEFAULT_DATABASE_URL
from monitor.config._api import ApiConfig, SchedulerConfig
from monitor.config._base import StrictModel
from monitor.config._monitoring import DriftConfig, OutcomeConfig
from monitor.config._names import CONTEXT_KEY, RegistryNames
from monitor.config._sources import CollectConfig, SourceConfig
from monitor.config._suggest import problems
from monitor.config.alerts import AlertsConfig
from monitor.config.columns import ColumnsConfig
from monitor.config.fairness import FairnessConfig
from monitor.config.guards import GuardsConfig
from monitor.config.segments import SegmentCheckConfig
from monitor.config.serving import CanaryConfig, ResourceScrapeConfig, SloConfig
from monitor.config.shadow import ShadowConfig
from monitor.config.watch import CanaryPairConfig, SkewCheckConfig
from monitor.errors import ConfigError

# libyaml's safe loader where PyYAML was built with it: the pure-Python one takes seconds over a
# config of a thousand models (issue 40); both build the same plain data.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Environment variables that override config keys (secrets and deployment-specific values).
ENV_OVERRIDES: Mapping[str, str] = {
    "MODELWATCH_DATABASE_URL": "database_url",
}


class ModelConfig(StrictModel):
    """A monitored model and the columns its windows are sliced by."""

    # At most the storage's `model` columns (200; tests/collectors/test_edge.py holds them equal).
    name: str = Field(
        min_length=1,
        max_length=200,
        description="The model's name, as events and the CLI give it (at most 200 characters).",
    )
    slices: list[str] = Field(
        default_factory=list,
        description=(
            "Columns (features or metadata) whose values windows are also profiled and compared by."
        ),
    )
    # Bounded metric labels: slice values past this many per column go to "other".
    max_slice_values: int = Field(
        default=50,
        ge=1,
        le=1000,
        description=(
            "Distinct values kept per slice column; later values are bucketed as `(other)`."
        ),
    )
    # Numeric columns profiled as categories by `baseline create --config` (codes, ids).
    categorical: list[str] = Field(
        default_factory=list,
        description=(
            "Numeric columns that `baseline create --config` profiles as categories (codes, ids)."
        ),
    )
    drift: DriftConfig = Field(
        default_factory=DriftConfig, description="How windows are compared with the baseline."
    )
    outcomes: OutcomeConfig = Field(
        default_factory=OutcomeConfig,
        description="Per-slice outcome metrics of joined predictions and labels.",
    )
    columns: ColumnsConfig = Field(
        default_factory=ColumnsConfig,
        description=(
            "Column roles for `baseline create`, `drift` and `skew` (`--config F --model M`)."
        ),
    )
    slo: SloConfig | None = Field(
        default=None, description="Serving objectives judged on each window (optional)."
    )
    canary: CanaryConfig = Field(
        default_factory=CanaryConfig,
        description="Live canary analysis of a version against a stable one.",
    )
    generative: bool = Field(
        default=False,
        description=(
            "A generative model (text generation): its events may carry the generative "
            "measures (time to first token, time per output token, tokens per second, token "
            "counts); on any other model those fields are dead letters (`not_generative`)."
        ),
    )
    resources: list[ResourceScrapeConfig] = Field(
        default_factory=list,
        description=(
            "Replicas whose Prometheus endpoint the daemon scrapes for resource samples "
            "(GPU utilisation and memory, CPU, queue depth...), per version."
        ),
    )
    shadow: ShadowConfig | None = Field(
        default=None,
        description=(
            "Paired shadow mode: events of one request id with `role` primary and shadow are "
            "paired and compared (optional; without it roles are validated but not paired)."
        ),
    )
    fairness: FairnessConfig | None = Field(
        default=None,
        description=(
            "Fairness metrics between the groups of protected attributes in each labelled "
            "window (optional; binary classification)."
        ),
    )

    @field_validator("name")
    @classmethod
    def _printable_name(cls, value: str) -> str:
        if not value.isprintable():
            raise ValueError("must not contain control characters")
        return value

    @field_validator("slices")
    @classmethod
    def _unique_slices(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("slice columns must be unique")
        if any(not s for s in value):
            raise ValueError("slice column names must not be empty")
        if any(len(s) > 200 or not s.isprintable() for s in value):
            raise ValueError("slice column names are at most 200 printable characters")
        return value

    @model_validator(mode="after")
    def _fairness_attributes_sliced(self) -> ModelConfig:
        if self.fairness is None:
            return self
        if self.outcomes.task != "classification":
            raise ValueError(
                f"fairness: needs outcomes.task classification (binary), not {self.outcomes.task}"
            )
        unsliced = [a for a in self.fairness.attributes if a not in self.slices]
        if unsliced:
            raise ValueError(
                f"fairness.attributes: {', '.join(map(repr, unsliced))} must also be in slices "
                "(a protected attribute's groups are a slice column's values)"
            )
        return self


class Config(StrictModel):
    """Everything `modelwatch` reads from its YAML file."""

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description=(
            "SQLite or PostgreSQL URL (`postgresql://user@host/db`, psycopg 3); "
            "`MODELWATCH_DATABASE_URL` overrides it."
        ),
    )
    models: list[ModelConfig] = Field(default_factory=list, description="The monitored models.")
    sources: list[SourceConfig] = Field(
        default_factory=list,
        description="Where events come from: Kafka topics and JSONL serving logs.",
    )
    api: ApiConfig = Field(
        default_factory=ApiConfig, description="The HTTP API of `modelwatch serve`."
    )
    scheduler: SchedulerConfig = Field(
        default_factory=SchedulerConfig,
        description="Intervals and retries of the daemon's scheduled jobs.",
    )
    alerts: AlertsConfig = Field(
        default_factory=AlertsConfig,
        description="Alert rules, grouping, inhibition, receivers and delivery.",
    )
    guards: GuardsConfig = Field(
        default_factory=GuardsConfig,
        description="The release gate's runtime settings and thresholds.",
    )
    collect: CollectConfig = Field(
        default_factory=CollectConfig,
        description="Windows, lateness, batching and the label join of the collectors.",
    )
    canaries: list[CanaryPairConfig] = Field(
        default_factory=list,
        description="Canary pairs the daemon judges on schedule, overall and per slice.",
    )
    skew: list[SkewCheckConfig] = Field(
        default_factory=list,
        description="Training-serving skew checks the daemon runs on schedule.",
    )
    segments: list[SegmentCheckConfig] = Field(
        default_factory=list,
        description="Weak-segment searches the daemon runs on schedule (labelled or label-free).",
    )

    @field_validator("models")
    @classmethod
    def _unique_models(cls, value: list[ModelConfig]) -> list[ModelConfig]:
        names = [m.name for m in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"model names must be unique; repeated: {', '.join(dupes)}")
        return value

    @model_validator(mode="after")
    def _scheduled_models_known(self) -> Config:
        names = {m.name for m in self.models}
        unknown = sorted(set(self.guards.schedule) - names)
        if unknown:
            raise ValueError(
                f"guards.schedule: {', '.join(map(repr, unknown))} is not a configured model "
                f"(models: {', '.join(sorted(names)) or 'none'})"
            )
        for model, entry in self.guards.schedule.items():
            # A run outliving its claim's lease could be taken over by another replica.
            if entry.time_budget.total_seconds() >= self.scheduler.lease_s:
                raise ValueError(
                    f"guards.schedule.{model}.time_budget must be shorter than "
                    f"scheduler.lease_s ({self.scheduler.lease_s:g}s)"
                )
        return self

    @model_validator(mode="after")
    def _watched_models(self) -> Config:
        known = {m.name for m in self.models}
        watched = [("canaries", i, p.model) for i, p in enumerate(self.canaries)]
        watched += [("skew", i, c.model) for i, c in enumerate(self.skew)]
        watched += [("segments", i, c.model) for i, c in enumerate(self.segments)]
        for what, i, model in watched:
            if model not in known:
                listed = ", ".join(sorted(known)) or "none"
                raise ValueError(f"{what}[{i}]: no model {model!r} (models: {listed})")
        pairs = [p.key for p in self.canaries]
        checks = [c.name for c in self.skew]
        searches = [c.name for c in self.segments]
        unique = (("canary pairs", pairs), ("skew check names", checks),
                  ("segment check names", searches))  # fmt: skip
        for kind, names in unique:
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"{kind} must be unique; repeated: {', '.join(dupes)}")
        return self

    @field_validator("sources")
    @classmethod
    def _unique_sources(cls, value: list[Any]) -> list[Any]:
        names = [s.name for s in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"source names must be unique; repeated: {', '.join(dupes)}")
        return value


def format_validation_error(source: str, exc: ValidationError) -> str:
    """One line naming the file and the first offending key (`config check` lists them all)."""
    # A typo shows up as an unknown key plus a missing one; the unknown key is the useful half.
    found = problems(Config, exc)
    more = len(found) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{source}: {found[0]}{suffix}"


def parse_config(
    data: Any,
    source: str = "<config>",
    env: Mapping[str, str] | None = None,
    names: RegistryNames | None = None,
) -> Config:
    """Validate already-parsed YAML data, applying environment overrides; with `names`, every
    registry name is checked against them (the composition root always passes them)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys")
    merged = dict(data)
    environ = os.environ if env is None else env
    for var, key in ENV_OVERRIDES.items():
        value = environ.get(var)
        if value:
            merged[key] = value
    try:
        return Config.model_validate(merged, context={CONTEXT_KEY: names})
    except ValidationError as exc:
        every = [f"{source}: {line}" for line in problems(Config, exc)]
        raise ConfigError(format_validation_error(source, exc), every) from None


def load_config(
    path: str | Path, env: Mapping[str, str] | None = None, names: RegistryNames | None = None
) -> Config:
    """Read and validate a YAML config file; every problem is a one-line ConfigError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read config file: {exc}") from None
    try:
        data = yaml.load(text, Loader=_LOADER)
    except RecursionError:  # PyYAML recurses once per nesting level
        raise ConfigError(f"{p}: invalid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{p}: invalid YAML{where}: {problem}") from None
    return parse_config(data, source=str(p), env=env, names=names)
