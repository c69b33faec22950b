"""Interfaces of the alerts package: the signals it evaluates and the receivers it delivers to.

A :class:`Signal` is what the daemon makes of another package's result (a drift result, an
outcome metric, a guard verdict, ingest health) so that this package depends on none of them.
A :class:`Receiver` turns a stored notification (:class:`Notification`) into HTTP requests.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal, Protocol, get_args

from monitor.errors import InputError

# The one list of kinds: config checks rule kinds against it at load (monitor/app/daemon/names.py).
SignalKind = Literal[
    "drift",
    "drift_count",
    "outcome",
    "guard",
    "ingest_lag",
    "dead_letter_rate",
    "no_data",
    "evaluation_failed",
    "slo",
    "estimated_outcome",
    "multivariate_drift",
    "shadow",
    "guard_divergence",
    "canary",
    "skew",
    "fairness",
    "segment",
]
SIGNAL_KINDS: tuple[str, ...] = get_args(SignalKind)


@dataclass(frozen=True)
class KindDoc:
    """What a signal kind carries: its labels, what its value measures and when it fires.

    The docs' signal reference is generated from these, and a test fails when a kind lacks one.
    """

    labels: tuple[str, ...]
    value: str
    fires: str
    details: tuple[str, ...] = ()  # the kind's `Signal.details`: annotation placeholders only


# Alert labels are a signal's labels plus the rule's `labels`, `alertname`, `severity`, `kind`.
SIGNAL_KIND_DOCS: Mapping[str, KindDoc] = MappingProxyType(
    {
        "drift": KindDoc(
            ("model", "version", "column", "slice", "method"),
            "a drift statistic of one column, slice and method in the newest window; threshold:"
            " its bound (a `missing` column fires with method `schema`, a `new` one does not)",
            "status `drift` or `missing`",
        ),
        "drift_count": KindDoc(
            ("model", "version"),
            "columns drifted (or missing) overall in the newest window",
            "at least one column drifted",
        ),
        "outcome": KindDoc(
            ("model", "version", "metric", "slice"),
            "an outcome metric of joined labels in the newest labelled window; threshold: its"
            " configured baseline (metrics without a baseline send no signal); annotations also"
            " read `{level}`, the one-sided level its verdict was decided at, `{family}`, how"
            " many results Holm's correction decided together (1: per result), and `{decided}`,"
            ' both as a clause ("; decided at level 0.0063 of a family of 4 results, Holm";'
            " empty for rows stored without a level)",
            "status `degraded`",
            ("level", "family", "decided"),
        ),
        "guard": KindDoc(
            ("model", "version", "verdict", "criterion", "slice"),
            "one criterion of the newest gate run (manual or a scheduled replay) of the version:"
            " its value; threshold: its bound; `verdict` is the run's (a run without criteria:"
            " criterion `verdict`, no value)",
            "the criterion failed (a later passing run resolves it)",
        ),
        "ingest_lag": KindDoc(
            ("source",),
            "messages (file bytes) between committed positions and the end, per source with a"
            " partition or file behind; a source that caught up has no signal",
            "lag > 0",
        ),
        "dead_letter_rate": KindDoc(
            ("source",),
            "dead letters / (events + dead letters) since the previous evaluation (the first:"
            " since the source started)",
            "rate > 0",
        ),
        "no_data": KindDoc(
            ("model",),
            "minutes since the model's last event was written; None if it never had one",
            "after 2 windows (`collect.window`) without an event, or never",
        ),
        "evaluation_failed": KindDoc(
            ("model", "version"),
            "windows (or the baseline) of that version whose evaluation is failing; a failing"
            " canary pair, skew check or skew source adds labels `job` (`canary`, `skew`) and"
            " `item` (naming the pair, check or source) and counts its failures in a row",
            "while any fails; resolves when they all succeed",
        ),
        "slo": KindDoc(
            ("model", "version", "objective", "slice"),
            "a serving objective's value in the newest window; threshold: its configured bound",
            "a breach (fewer than `slo.min_events` requests: no latency or error-rate signal)",
        ),
        "estimated_outcome": KindDoc(
            ("model", "version", "metric", "slice"),
            "a metric estimated without labels (CBPE; regression losses: DLE) in the newest"
            " window; threshold: its reference-chunk lower bound, a loss's upper bound (the"
            " slice's own, else the overall one)",
            "estimate below the threshold, a loss above it (`degraded`)",
        ),
        "multivariate_drift": KindDoc(
            ("model", "version", "slice"),
            "mean PCA reconstruction error of the newest window; threshold: the reference-chunk"
            " bound it is judged by (upper, or lower when below it)",
            "outside the bounds (`drift`)",
        ),
        "shadow": KindDoc(
            ("model", "version", "primary_version", "slice", "criterion"),
            "paired shadow mode, newest window with pairs of a shadow `version` against its"
            " `primary_version`: criterion `flip_rate`, the Wilson 95% lower bound of the flip"
            " rate (threshold `shadow.max_flip_rate`); `mcnemar`, McNemar's exact p-value on"
            " labelled correctness pairs (threshold `shadow.alpha`); sent once the criterion has"
            " `shadow.min_pairs` pairs",
            "lower bound above `max_flip_rate`, or p below `alpha`",
        ),
        "guard_divergence": KindDoc(
            ("model", "version"),
            "none; the newest gate run of the version did not pass on content (reference,"
            " candidate and golden sha256, preset) that passed before: hardware or runtime drift",
            "such a run is the newest (a later pass resolves it)",
        ),
        "canary": KindDoc(
            ("model", "version", "stable", "criterion", "slice"),
            "a criterion of a declared canary pair (`version` the canary) in one slice (`all`:"
            " the whole traffic) of its newest scheduled evaluation: the canary's value;"
            " threshold: its bound; criterion `verdict`: criteria failing anywhere",
            "the criterion fails after the multiple-testing correction (`verdict`: the pair"
            " fails); criteria without evidence send no signal",
        ),
        "skew": KindDoc(
            ("model", "check", "column"),
            "share of joined entities whose serving and offline values of a feature differ in"
            " the newest run of a skew check; threshold: the check's `threshold`",
            "mismatch rate above the threshold",
        ),
        "fairness": KindDoc(
            ("model", "version", "attribute", "metric", "group"),
            "a fairness metric of a protected attribute in the newest labelled window: the"
            " comparison of its groups (group `all`: demographic parity difference and ratio,"
            " equal opportunity and equalized odds differences) or one group's calibration"
            " error; threshold: its bound (`fairness.thresholds`); `insufficient_data` sends none",
            "status `violation`: the whole simultaneous (1 - `fairness.alpha`) interval is past"
            " the bound",
        ),
        "segment": KindDoc(
            ("model", "check", "mode", "segment", "persistence"),
            "one segment reported by the newest run of a segment check (`segment` its"
            " predicates, `persistence` `new` or `persisting`: also in the run before): the"
            " size of its effect (labels: loss inside minus outside; estimated: expected error"
            " inside minus outside; drift: the change of its share); threshold 0",
            "while the newest run reports it (its q-value below the check's `alpha`)",
        ),
    }
)
if set(SIGNAL_KIND_DOCS) != set(SIGNAL_KINDS):  # pragma: no cover - caught by the docs tests
    raise RuntimeError(f"signal kinds without docs: {set(SIGNAL_KINDS) - set(SIGNAL_KIND_DOCS)}")


def fingerprint(labels: Mapping[str, str]) -> str:
    """A stable 16-hex-digit hash of a label set (order-independent)."""
    canonical = json.dumps(sorted(labels.items()), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Signal:
    """One observation that rules are evaluated over.

    kind: what produced it (``drift`` per column/slice, ``drift_count`` of drifted columns,
    ``outcome`` for a degraded outcome metric, ``guard`` for a gate verdict, ``ingest_lag``
    in messages behind, ``dead_letter_rate`` as a fraction, ``no_data`` in minutes since the
    last event, ``evaluation_failed`` in failing windows of a model version, ``slo`` per
    serving objective and slice of the newest window, firing on a breach,
    ``estimated_outcome`` per estimated metric (CBPE, DLE) and slice, firing past its reference
    threshold, ``multivariate_drift`` per slice, firing when the mean reconstruction error
    leaves its reference bounds, ``shadow`` per shadow version, slice and criterion of paired
    shadow mode, firing on a flip rate or a McNemar test past its bound).
    labels: identify the subject (model, version, column, slice, window, method, ...); they
    become the alert's labels, so keep their values bounded.
    value/threshold: the number that decided it and its bound (None when there is none).
    firing: the producer's verdict (drift, degraded, fail, over threshold).
    details: more placeholders for the annotation templates, never labels (so their values
    need not be bounded): an outcome's `{level}`, `{family}` and `{decided}`
    (`alerts.annotations.decision_details`).
    """

    kind: SignalKind
    labels: Mapping[str, str]
    value: float | None
    threshold: float | None
    firing: bool
    observed_at: datetime
    details: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in SIGNAL_KINDS:
            raise InputError(f"unknown signal kind {self.kind!r}; valid: {', '.join(SIGNAL_KINDS)}")
        if self.observed_at.tzinfo is None:
            raise InputError(f"signal observed_at {self.observed_at.isoformat()} is naive; use UTC")
        bad = [k for k, v in self.labels.items() if not isinstance(v, str) or not k]
        if bad:
            raise InputError(f"signal label(s) {', '.join(map(repr, bad))} must map to strings")
        object.__setattr__(self, "labels", MappingProxyType(dict(sorted(self.labels.items()))))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))


@dataclass(frozen=True)
class AlertSnapshot:
    """An alert as notified: status at the time of the notification."""

    fingerprint: str
    status: Literal["firing", "resolved"]
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: datetime
    ends_at: datetime | None
    value: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "status": self.status,
            "labels": self.labels,
            "annotations": self.annotations,
            "starts_at": self.starts_at.isoformat(),
            "ends_at": self.ends_at.isoformat() if self.ends_at else None,
            "value": self.value,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AlertSnapshot:
        ends = data.get("ends_at")
        return cls(
            fingerprint=data["fingerprint"],
            status=data["status"],
            labels=dict(data["labels"]),
            annotations=dict(data["annotations"]),
            starts_at=datetime.fromisoformat(data["starts_at"]),
            ends_at=datetime.fromisoformat(ends) if ends else None,
            value=data.get("value"),
        )


@dataclass(frozen=True)
class Notification:
    """A group's message, receiver-independent, as stored in the outbox payload."""

    receiver: str
    group_key: str
    group_labels: dict[str, str]
    alerts: tuple[AlertSnapshot, ...]
    external_url: str
    created_at: datetime

    @property
    def status(self) -> Literal["firing", "resolved"]:
        """``firing`` while any alert in it fires (Alertmanager's rule)."""
        return "firing" if any(a.status == "firing" for a in self.alerts) else "resolved"

    def to_json(self) -> dict[str, Any]:
        return {
            "receiver": self.receiver,
            "group_key": self.group_key,
            "group_labels": self.group_labels,
            "alerts": [a.to_json() for a in self.alerts],
            "external_url": self.external_url,
            "created_at": self.created_at.isoformat(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Notification:
        return cls(
            receiver=data["receiver"],
            group_key=data["group_key"],
            group_labels=dict(data["group_labels"]),
            alerts=tuple(AlertSnapshot.from_json(a) for a in data["alerts"]),
            external_url=data["external_url"],
            created_at=datetime.fromisoformat(data["created_at"]),
        )


@dataclass(frozen=True)
class OutboundRequest:
    """One HTTP POST a receiver wants sent; headers exclude signing and idempotency."""

    url: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class Receiver(Protocol):
    """Renders a notification for one destination.

    Implementations are pure: no I/O. The delivery worker adds the `Idempotency-Key` and
    `X-Modelwatch-Signature` headers, sends with timeouts, and retries. A receiver may split
    one notification into several requests (PagerDuty takes one event per request); each gets
    its own idempotency key suffix.
    """

    @property
    def name(self) -> str:
        """The receiver's configured name."""
        ...

    def render(self, notification: Notification) -> list[OutboundRequest]:
        """The requests that deliver `notification`."""
        ...


def common_items(dicts: list[dict[str, str]]) -> dict[str, str]:
    """Key/value pairs present with the same value in every dict."""
    if not dicts:
        return {}
    first = dicts[0]
    return {k: v for k, v in first.items() if all(d.get(k) == v for d in dicts[1:])}


ZERO_TIME = "0001-01-01T00:00:00Z"


def rfc3339(value: datetime | None) -> str:
    """UTC RFC 3339 with a `Z` (Alertmanager's zero time for None)."""
    if value is None:
        return ZERO_TIME
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def json_bytes(data: Any) -> bytes:
    """Compact UTF-8 JSON, the body every receiver sends."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
