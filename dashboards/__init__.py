"""Grafana dashboards as code, provisioning and Prometheus metric definitions.

The metrics names import eagerly (prometheus-client only); the Grafana names load the
foundation SDK on first access, so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from dashboards._labels import LabelLimiter, SliceLabels
from dashboards.exposition import MetricsServer, metrics_asgi_app, metrics_wsgi_app, serve_metrics
from dashboards.metrics import ModelwatchMetrics
from dashboards.views import VIEW_COLUMNS

_LAZY = {
    "DatasourceSpec": "dashboards.datasource",
    "ProvisionReport": "dashboards.provision",
    "Provisioner": "dashboards.provision",
    "build_dashboards": "dashboards._render",
    "export": "dashboards.export",
    "validate_dashboard": "dashboards._render",
}

__all__ = [
    "VIEW_COLUMNS",
    "DatasourceSpec",
    "LabelLimiter",
    "MetricsServer",
    "ModelwatchMetrics",
    "ProvisionReport",
    "Provisioner",
    "SliceLabels",
    "build_dashboards",
    "export",
    "metrics_asgi_app",
    "metrics_wsgi_app",
    "serve_metrics",
    "validate_dashboard",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dashboards' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
