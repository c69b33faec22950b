"""Fixtures and builders for the alerts tests: config, signals, an evaluator per backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from alerts._evaluator import Evaluator
from alerts.base import Signal
from monitor.config.alerts import AlertsConfig

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """T0 plus a number of seconds."""
    return T0 + timedelta(seconds=seconds)


def drift(
    model: str = "fraud",
    column: str = "amount",
    firing: bool = True,
    value: float = 0.3,
    **extra: str,
) -> Signal:
    """A per-column drift signal."""
    labels = {"model": model, "version": "3", "column": column, "slice": "", **extra}
    return Signal("drift", labels, value, 0.2, firing, T0)


def ingest(model: str = "fraud", lag: float = 1000.0) -> Signal:
    """A consumer-lag signal (fires when over its threshold of 500)."""
    return Signal("ingest_lag", {"model": model}, lag, 500.0, lag > 500, T0)


def alerts_config(**overrides: Any) -> AlertsConfig:
    """A config with one webhook receiver and one drift rule (`for: 0`), overridable."""
    data: dict[str, Any] = {
        "receivers": [{"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/hook"}],
        "rules": [
            {
                "name": "FeatureDrift",
                "kind": "drift",
                "receivers": ["hook"],
                "annotations": {
                    "summary": "{model} column {column} drifted: {value:.2f} > {threshold}",
                    "runbook_url": "https://runbooks.example/drift#{column}",
                },
            }
        ],
    }
    data.update(overrides)
    return AlertsConfig.model_validate(data)


@pytest.fixture
def make_evaluator(engine: Engine) -> Any:
    """Build an Evaluator on the per-backend `engine` for a given config."""

    def build(config: AlertsConfig | None = None) -> Evaluator:
        return Evaluator(engine, config or alerts_config())

    return build
