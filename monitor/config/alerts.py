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

    name: str = Field(description="Label name.")
    op: Literal["=", "!=", "=~", "!~"] = Field(
        description="`=`, `!=`, `=~` (RE2, fully anchored) or `!~`."
    )
    value: str = Field(description="Value or regex.")

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

    group_by: list[str] = Field(
        default_factory=lambda: ["alertname", "model"],
        description="Labels whose values make one notification group.",
    )
    group_wait: Duration = Field(
        default=timedelta(seconds=30),
        description="Batch what fires together this long before a group's first notification.",
    )
    group_interval: Duration = Field(
        default=timedelta(minutes=5),
        description=(
            "New alerts in an already-notified group wait this long after the last notification."
        ),
    )
    repeat_interval: Duration = Field(
        default=timedelta(hours=4), description="Re-send a still-firing group this often."
    )

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

    name: str = Field(
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z_][A-Za-z0-9_:.-]*$",
        description="Rule name (the `alertname` label).",
    )
    kind: SignalKind = Field(description="Signal kind the rule selects (see the signal reference).")
    matchers: list[Matcher] = Field(
        default_factory=list,
        description="Label matchers over the alert labels, all of which must match.",
    )
    # None: fire when the signal says so; a number: fire when the signal's value exceeds it.
    above: float | None = Field(
        default=None,
        description=(
            "Fire when the signal's value exceeds this instead of on the signal's own verdict."
        ),
    )
    for_: Duration = Field(
        default=timedelta(0),
        alias="for",
        description="Pending this long before firing (0: at once).",
    )
    # A firing alert stays firing this long after its condition clears (damps flapping).
    keep_firing_for: Duration = Field(
        default=timedelta(0),
        description="Stays firing this long after the condition clears (damps flapping).",
    )
    severity: Literal["info", "warning", "critical"] = Field(
        default="warning", description="The `severity` label."
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="Extra labels added to the alert."
    )
    annotations: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Templates over labels, `{value}`, `{threshold}`, `{observed_at}` and the kind's "
            "details (`outcome`: `{level}`, `{family}`, `{decided}`); override the kind's "
            "default summary and description key by key."
        ),
    )
    action: Literal["notify", "rollback"] = Field(
        default="notify",
        description="`rollback`: also queue a rollback request once per firing episode.",
    )
    receivers: list[str] = Field(
        default_factory=list, description="Names of the receivers notified."
    )
    grouping: GroupingConfig | None = Field(
        default=None, description="Per-rule override of the whole `grouping` block."
    )

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

    source_matchers: list[Matcher] = Field(
        min_length=1, description="Alerts that, while firing, mute others."
    )
    target_matchers: list[Matcher] = Field(min_length=1, description="Alerts that are muted.")
    equal: list[str] = Field(
        default_factory=list, description="Labels whose values must be equal in source and target."
    )


class ReceiverConfig(StrictModel):
    """Where notifications go. `secret_env` names the environment variable holding the HMAC
    secret (the secret itself never appears in config, logs or reprs)."""

    name: str = Field(
        min_length=1, max_length=200, description="Receiver name, referred to by rules."
    )
    type: ReceiverType = Field(description="`webhook`, `slack`, `pagerduty` or `alertmanager`.")
    url: str = Field(
        min_length=1,
        description=(
            "Where requests go (`http://` or `https://`; `alertmanager`: "
            "`/api/v2/alerts` is appended)."
        ),
    )
    secret_env: str | None = Field(
        default=None,
        description="Environment variable holding the HMAC secret that signs requests.",
    )
    # PagerDuty: environment variable holding the integration (routing) key.
    routing_key_env: str | None = Field(
        default=None, description="PagerDuty: environment variable holding the routing key."
    )
    timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=120,
        description=(
            "Total deadline of one delivery attempt (seconds): connecting, sending and reading "
            "the whole answer, however slowly the receiver trickles it."
        ),
    )
    # Alertmanager push: firing alerts are sent with endsAt this far ahead (re-pushed on repeat).
    ends_at_horizon: Duration = Field(
        default=timedelta(hours=8),
        description="Alertmanager push: firing alerts are sent with `endsAt` this far ahead.",
    )

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

    max_attempts: int = Field(
        default=12, ge=1, le=1000, description="Attempts before a notification is `dead`."
    )
    max_age: Duration = Field(
        default=timedelta(hours=24), description="A notification older than this is `dead`."
    )
    backoff_initial: Duration = Field(
        default=timedelta(seconds=5),
        description="Wait before the first retry, doubled per attempt with jitter.",
    )
    backoff_max: Duration = Field(
        default=timedelta(minutes=10), description="The longest wait between retries."
    )
    # A claimed row whose worker died is claimable again after this long.
    lease: Duration = Field(
        default=timedelta(seconds=60),
        description="A claimed row whose worker died is claimable again after this long.",
    )
    batch_size: int = Field(
        default=50, ge=1, le=1000, description="Rows claimed per pass (at most one per group)."
    )
    # Requests of one batch in flight at once (a batch holds at most one row per group).
    concurrency: int = Field(
        default=8, ge=1, le=64, description="Requests of one batch in flight at once."
    )
    poll_interval: Duration = Field(
        default=timedelta(seconds=2), description="How often the worker looks for due rows."
    )


class AlertsConfig(StrictModel):
    """The `alerts:` section."""

    external_url: str = Field(
        default="http://localhost:8080",
        description="Base of `generatorURL` and `externalURL` in payloads.",
    )
    grouping: GroupingConfig = Field(
        default_factory=GroupingConfig,
        description="Default grouping of every rule (Alertmanager's defaults).",
    )
    rules: list[RuleConfig] = Field(default_factory=list, description="Alerting rules.")
    inhibit_rules: list[InhibitRuleConfig] = Field(
        default_factory=list, description="Rules that mute alerts while others fire."
    )
    receivers: list[ReceiverConfig] = Field(
        default_factory=list, description="Where notifications go."
    )
    delivery: DeliveryConfig = Field(
        default_factory=DeliveryConfig, description="Retry policy of the outbox delivery worker."
    )

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
