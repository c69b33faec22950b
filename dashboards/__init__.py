"""Grafana dashboards as code, provisioning and Prometheus metric definitions."""

from __future__ import annotations

from dashboards.exposition import MetricsServer, metrics_asgi_app, metrics_wsgi_app, serve_metrics
from dashboards.labels import LabelLimiter, SliceLabels
from dashboards.metrics import ModelwatchMetrics

__all__ = [
    "LabelLimiter",
    "MetricsServer",
    "ModelwatchMetrics",
    "SliceLabels",
    "metrics_asgi_app",
    "metrics_wsgi_app",
    "serve_metrics",
]
