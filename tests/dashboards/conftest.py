"""Fixtures for the dashboards tests: an isolated metrics registry and a small model config."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from dashboards import ModelwatchMetrics
from monitor.config import ModelConfig


@pytest.fixture
def models() -> list[ModelConfig]:
    return [ModelConfig(name="fraud", slices=["region", "channel"], max_slice_values=3)]


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def metrics(registry: CollectorRegistry, models: list[ModelConfig]) -> ModelwatchMetrics:
    return ModelwatchMetrics(registry, models)
