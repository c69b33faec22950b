"""Default annotations per signal kind and the generator URL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from alerts._rules import evaluate_rules
from alerts.annotations import DEFAULT_ANNOTATIONS, decision_details, generator_url
from alerts.base import SIGNAL_KINDS, Signal
from monitor.config.alerts import RuleConfig

NOW = datetime(2026, 6, 1, tzinfo=UTC)
LABELS = {
    "model": "fraud",
    "version": "3",
    "column": "amount",
    "method": "psi",
    "metric": "accuracy",
    "source": "kafka",
    "verdict": "fail",
    "slice": "region=eu",
}


@pytest.mark.parametrize("kind", SIGNAL_KINDS)
def test_a_rule_without_annotations_gets_a_summary_and_description(kind: str) -> None:
    rule = RuleConfig.model_validate({"name": "r", "kind": kind})
    [cand] = evaluate_rules([rule], [Signal(kind, LABELS, 0.25, 0.2, True, NOW)]).values()
    assert set(cand.annotations) == {"summary", "description"}
    assert all("{" not in text and text for text in cand.annotations.values())
    assert "fraud" in " ".join(cand.annotations.values()) or kind in (
        "ingest_lag",
        "dead_letter_rate",
    )


def test_drift_default_reads_as_a_sentence() -> None:
    rule = RuleConfig.model_validate({"name": "r", "kind": "drift"})
    [cand] = evaluate_rules([rule], [Signal("drift", LABELS, 0.25, 0.2, True, NOW)]).values()
    assert cand.annotations["summary"] == "Drift in fraud 3: column amount (psi, slice region=eu)"
    assert "psi of column amount is 0.25 against threshold 0.2" in cand.annotations["description"]


def test_rule_annotations_override_key_by_key() -> None:
    rule = RuleConfig.model_validate(
        {"name": "r", "kind": "drift", "annotations": {"summary": "own {column}"}}
    )
    [cand] = evaluate_rules([rule], [Signal("drift", LABELS, 0.25, 0.2, True, NOW)]).values()
    assert cand.annotations["summary"] == "own amount"
    assert cand.annotations["description"] == DEFAULT_ANNOTATIONS["drift"]["description"].format(
        **LABELS, value=0.25, threshold=0.2
    )


def test_generator_url_points_at_the_alert_detail() -> None:
    assert generator_url("http://mw:8080/", "ab12") == "http://mw:8080/v1/alerts/ab12"
    assert generator_url("http://mw", "a/b") == "http://mw/v1/alerts/a%2Fb"


def test_outcome_default_says_at_what_level_it_was_decided() -> None:
    rule = RuleConfig.model_validate({"name": "r", "kind": "outcome"})

    def summary(details: dict[str, str]) -> str:
        signal = Signal("outcome", LABELS, 0.81, 0.9, True, NOW, details)
        [cand] = evaluate_rules([rule], [signal]).values()
        return cand.annotations["summary"]

    head = "accuracy of fraud 3 degraded (slice region=eu"
    holm = decision_details(0.025 / 4, 4)
    clause = "; decided at level 0.0063 of a family of 4 results, Holm"
    assert holm == {"level": "0.0063", "family": "4", "decided": clause}
    assert summary(holm) == f"{head}{clause})"
    assert summary(decision_details(0.025, 1)) == f"{head}; decided at level 0.025)"
    assert summary(decision_details(None, 4)) == f"{head})"  # a row stored before levels
