"""The dashboards package's public surface, and that importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import dashboards
from tests.conftest import REPO


def test_all_is_pinned() -> None:
    assert set(dashboards.__all__) == {
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
    }
    for name in dashboards.__all__:
        assert getattr(dashboards, name) is not None


def test_import_does_not_load_the_grafana_sdk() -> None:
    code = "import sys, dashboards; print('grafana_foundation_sdk' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"
