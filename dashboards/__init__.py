"""Grafana dashboards as code, provisioning and Prometheus metric definitions."""

from __future__ import annotations

__all__: list[str] = []
