"""Presentation: drift (JSON, self-contained HTML, Evidently's), skew and load-test reports."""

from __future__ import annotations

from monitor.reports._html import render_html
from monitor.reports._jsonreport import drift_report, write_json
from monitor.reports._loadtest import render_loadtest_html, render_loadtest_markdown
from monitor.reports._output import is_stdout, write_text
from monitor.reports._skew_html import render_skew_html

__all__ = [
    "drift_report",
    "is_stdout",
    "render_html",
    "render_loadtest_html",
    "render_loadtest_markdown",
    "render_skew_html",
    "write_json",
    "write_text",
]
