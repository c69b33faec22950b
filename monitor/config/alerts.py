"""Config of alerting (read by `alerts`): rules, grouping, inhibition, receivers, delivery.

Durations are written as `30s`, `5m`, `4h`, `1d` (or a number of seconds). Label matchers use
Alertmanager's syntax: `name=value`, `name!=value`, `name=~regex`, `name!~regex`; regexes are RE2
(linear time, no backreferences or lookaround) and anchored at both ends.
"""

from __future__ import annotations

import re
import string
from datetime import timedelta
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from monitor.config._base import StrictModel
from monitor.config._durations import Duration
from monitor.config._names import ReceiverType, SignalKind
from monitor.config._regex import compile_regex, fullmatch

_MATCHER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*(.*?)\s*$")
_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Matcher(StrictModel):
    """One label matcher; written in YAML as a string such as `kind=~"drift|drift_count"`."""

    name: str
    op: Literal["=", "!=", "=~", "!~"]
    value: str

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            m = _MATCHER.match(data)
            if m is None:
                raise ValueError(
                    f"cannot parse matcher {data!r}; use name=value, name!=value, "
                    "name=~regex or name!~regex"
                )
            value = m.group(3)
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            return {"name": m.group(1), "op": m.group(2), "value": value}
        return data

    @model_validator(mode="after")
    def _regex_compiles(self) -> Matcher:
        if self.op in ("=~", "!~"):
            compile_regex(self.value)
        return self

    @classmethod
    def parse(cls, text: str) -> Matcher:
        """Parse `name=value` (and the other operators); ValueError on bad syntax."""
        return cls.model_validate(text)

    def matches(self, labels: dict[str, str]) -> bool:
        """Whether a label set satisfies this matcher (a missing label reads as "")."""
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        hit = fullmatch(self.value, actual)
        return hit if self.op == "=~" else not hit

    def __str__(self) -> str:
        return f'{self.name}{self.op}"{self.value}"'


def matches_all(matchers: list[Matcher], labels: dict[str, str]) -> bool:
    """True when every matcher matches (an empty list matches everything)."""
    return all(m.matches(labels) for m in matchers)


class GroupingConfig(StrictModel):
    """How alerts are batched into notifications; defaults are Alertmanager's."""

    group_by: list[str] = Field(default_factory=lambda: ["alertname", "model"])
    group_wait: Duration = timedelta(seconds=30)
    group_interval: Duration = timedelta(minutes=5)
    repeat_interval: Duration = timedelta(hours=4)

    @field_validator("group_by")
    @classmethod
    def _label_names(cls, value: list[str]) -> list[str]:
        bad = [v for v in value if not _LABEL_NAME.match(v)]
        if bad:
            raise ValueError(f"invalid label name(s): {', '.join(bad)}")
        return value


def _check_template(text: str) -> str:
    try:
        list(string.Formatter().parse(text))
    except ValueError as exc:
        raise ValueError(f"invalid template {text!r}: {exc}") from None
    return text


class RuleConfig(StrictModel):
    """An alerting rule over one kind of signal."""

    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z_][A-Za-z0-9_:.-]*$")
    kind: SignalKind
    matchers: list[Matcher] = Field(default_factory=list)
    # None: fire when the signal says so; a number: fire when the signal's value exceeds it.
    above: float | None = None
    for_: Duration = Field(default=timedelta(0), alias="for")
    # A firing alert stays firing this long after its condition clears (damps flapping).
    keep_firing_for: Duration = timedelta(0)
    severity: Literal["info", "warning", "critical"] = "warning"
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    action: Literal["notify", "rollback"] = "notify"
    receivers: list[str] = Field(default_factory=list)
    grouping: GroupingConfig | None = None

    @field_validator("labels")
    @classmethod
    def _label_keys(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [k for k in value if not _LABEL_NAME.match(k)]
        if bad:
            raise ValueError(f"invalid label name(s): {', '.join(bad)}")
        return value

    @field_validator("annotations")
    @classmethod
    def _templates(cls, value: dict[str, str]) -> dict[str, str]:
        for text in value.values():
            _check_template(text)
        return value


class InhibitRuleConfig(StrictModel):
    """While an alert matching `source_matchers` fires, mute alerts matching `target_matchers`
    that carry the same values for the `equal` labels."""

    source_matchers: list[Matcher] = Field(min_length=1)
    target_matchers: list[Matcher] = Field(min_length=1)
    equal: list[str] = Field(default_factory=list)


class ReceiverConfig(StrictModel):
    """Where notifications go. `secret_env` names the environment variable holding the HMAC
    secret (the secret itself never appears in config, logs or reprs)."""

    name: str = Field(min_length=1, max_length=200)
    type: ReceiverType
    url: str = Field(min_length=1)
    secret_env: str | None = None
    # PagerDuty: environment variable holding the integration (routing) key.
    routing_key_env: str | None = None
    timeout_s: float = Field(default=10.0, gt=0, le=120)
    # Alertmanager push: firing alerts are sent with endsAt this far ahead (re-pushed on repeat).
    ends_at_horizon: Duration = timedelta(hours=8)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {value!r}")
        return value

    @field_validator("secret_env", "routing_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(f"not an environment variable name: {value!r}")
        return value


class DeliveryConfig(StrictModel):
    """Retry policy of the outbox delivery worker."""

    max_attempts: int = Field(default=12, ge=1, le=1000)
    max_age: Duration = timedelta(hours=24)
    backoff_initial: Duration = timedelta(seconds=5)
    backoff_max: Duration = timedelta(minutes=10)
    # A claimed row whose worker died is claimable again after this long.
    lease: Duration = timedelta(seconds=60)
    batch_size: int = Field(default=50, ge=1, le=1000)
    # Requests of one batch in flight at once (a batch holds at most one row per group).
    concurrency: int = Field(default=8, ge=1, le=64)
    poll_interval: Duration = timedelta(seconds=2)


class AlertsConfig(StrictModel):
    """The `alerts:` section."""

    external_url: str = "http://localhost:8080"
    grouping: GroupingConfig = Field(default_factory=GroupingConfig)
    rules: list[RuleConfig] = Field(default_factory=list)
    inhibit_rules: list[InhibitRuleConfig] = Field(default_factory=list)
    receivers: list[ReceiverConfig] = Field(default_factory=list)
    delivery: DeliveryConfig = Field(default_factory=DeliveryConfig)

    @model_validator(mode="after")
    def _references(self) -> AlertsConfig:
        for field, names in (
            ("rules", [r.name for r in self.rules]),
            ("receivers", [r.name for r in self.receivers]),
        ):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"{field} names must be unique; repeated: {', '.join(dupes)}")
        known = {r.name for r in self.receivers}
        for rule in self.rules:
            unknown = [r for r in rule.receivers if r not in known]
            if unknown:
                raise ValueError(
                    f"rule {rule.name!r} names unknown receiver(s) {', '.join(unknown)}; "
                    f"known: {', '.join(sorted(known)) or 'none'}"
                )
        return self
