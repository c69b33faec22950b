"""Rules applied to a batch of signals: which alerts are active, with what labels and text."""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from alerts.annotations import annotation_templates
from alerts.base import Signal, fingerprint
from monitor.config.alerts import RuleConfig, matches_all


@dataclass(frozen=True)
class Candidate:
    """A rule applied to one label set in this evaluation."""

    rule: RuleConfig
    fingerprint: str
    labels: dict[str, str]
    annotations: dict[str, str]
    value: float | None
    active: bool


class _LenientFormatter(string.Formatter):
    """`str.format` that renders a missing key as "" and a spec that does not fit as str()."""

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        return kwargs.get(key, "") if isinstance(key, str) else ""

    def format_field(self, value: Any, format_spec: str) -> Any:
        try:
            return super().format_field(value, format_spec)
        except (TypeError, ValueError):
            return str(value)


_FORMATTER = _LenientFormatter()


def render_annotations(
    templates: Mapping[str, str], labels: Mapping[str, str], signal: Signal
) -> dict[str, str]:
    """Fill `{label}`, `{value}`, `{threshold}` placeholders (and the signal's `details`) of
    each annotation template.

    `{slice}` reads "overall" for a signal about all rows (its empty slice label is dropped)."""
    context: dict[str, Any] = {
        "slice": "overall",
        **signal.details,
        **labels,
        "value": signal.value,
        "threshold": signal.threshold,
        "observed_at": signal.observed_at.isoformat(),
    }
    return {key: _FORMATTER.format(text, **context) for key, text in templates.items()}


def alert_labels(rule: RuleConfig, signal: Signal) -> dict[str, str]:
    """The signal's labels plus the rule's, `alertname`, `severity` and `kind` (rule wins).
    An empty value means "no such label", as in Prometheus and Alertmanager."""
    labels = dict(signal.labels)
    labels.update(rule.labels)
    labels.update({"alertname": rule.name, "severity": rule.severity, "kind": signal.kind})
    return {k: v for k, v in sorted(labels.items()) if v != ""}


def is_active(rule: RuleConfig, signal: Signal) -> bool:
    """`above` set: value > above; otherwise the producer's own verdict."""
    if rule.above is not None:
        return signal.value is not None and signal.value > rule.above
    return signal.firing


def evaluate_rules(rules: Iterable[RuleConfig], signals: Iterable[Signal]) -> dict[str, Candidate]:
    """Every (rule, signal) match keyed by fingerprint; of duplicates, an active one wins."""
    batch = list(signals)
    out: dict[str, Candidate] = {}
    for rule in rules:
        for signal in batch:
            if signal.kind != rule.kind:
                continue
            labels = alert_labels(rule, signal)
            if not matches_all(rule.matchers, labels):
                continue
            cand = Candidate(
                rule=rule,
                fingerprint=fingerprint(labels),
                labels=labels,
                annotations=render_annotations(
                    annotation_templates(signal.kind, rule.annotations), labels, signal
                ),
                value=signal.value,
                active=is_active(rule, signal),
            )
            prev = out.get(cand.fingerprint)
            if prev is None or (cand.active and not prev.active):
                out[cand.fingerprint] = cand
    return out
