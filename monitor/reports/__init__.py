"""Presentation of drift results: the JSON report, a self-contained HTML report, Evidently's."""

from __future__ import annotations

from monitor.reports.html import render_html
from monitor.reports.jsonreport import drift_report, write_json

__all__ = ["drift_report", "render_html", "write_json"]
