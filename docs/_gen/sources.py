"""The definitions the reference pages are generated from, built without starting anything."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase
from pydantic import BaseModel
from sqlalchemy import create_engine

from alerts.base import SIGNAL_KIND_DOCS, SIGNAL_KINDS
from dashboards.metrics import ModelwatchMetrics, http_request_histogram
from docs._gen.reference import SignalDoc
from monitor.app.daemon._app import create_app
from monitor.app.daemon._common import DaemonState
from monitor.config import Config


def config_model() -> type[BaseModel]:
    """The root of the YAML file."""
    return Config


def openapi_document() -> dict[str, Any]:
    """The daemon's OpenAPI document, from its FastAPI app on an unused in-memory database."""
    state = DaemonState(create_engine("sqlite://"), Config(), CollectorRegistry())
    return create_app(state).openapi()


def metric_collectors() -> list[MetricWrapperBase]:
    """Every metric modelwatch registers, on a registry of its own."""
    registry = CollectorRegistry()
    metrics = ModelwatchMetrics(registry)
    found = [v for v in vars(metrics).values() if isinstance(v, MetricWrapperBase)]
    found += [  # families of one gauge per registered name (the measures)
        g for v in vars(metrics).values() if isinstance(v, dict)
        for g in v.values() if isinstance(g, MetricWrapperBase)
    ]  # fmt: skip
    return [*found, http_request_histogram(registry)]


def signal_docs() -> list[SignalDoc]:
    """Every alert signal kind, in the order `SignalKind` lists them."""
    return [
        SignalDoc(kind, d.labels, d.value, d.fires)
        for kind in SIGNAL_KINDS
        for d in [SIGNAL_KIND_DOCS[kind]]
    ]
