"""Demo step: the drift report of the newest window, and the Grafana dashboards."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from dashboards.datasource import DatasourceSpec
from dashboards.export import export
from monitor.config import Config
from monitor.detectors import evaluate
from monitor.evaluation.windows import Window, reference_for, window_profiles
from monitor.reports import render_html
from monitor.storage import WindowProfile, session_factory


def drift_report(engine: Engine, config: Config, out: Path) -> Path:
    """An offline HTML drift report: the newest window against the baseline."""
    with session_factory(engine)() as s:
        start, end = s.execute(
            select(WindowProfile.window_start, WindowProfile.window_end)
            .order_by(WindowProfile.window_start.desc())
            .limit(1)
        ).one()
        count = s.scalar(select(func.count()).select_from(WindowProfile))
    assert count, "no window profiles to report on"
    model = config.models[0]
    reference = reference_for(engine, model.name, "1", model.drift.baseline)
    assert reference is not None
    current = window_profiles(engine, Window(model.name, "1", start, end), reference.slice_by)
    results = evaluate(reference, current)
    path = out / "drift.html"
    title = f"fraud v1: training baseline vs window {start:%Y-%m-%d %H:%M}"
    path.write_text(render_html(results, reference, current, title), encoding="utf-8")
    return path


def export_dashboards(out: Path) -> list[Path]:
    """Grafana file provisioning for the dashboards; the datasource is the PostgreSQL a
    production deployment uses (the demo's SQLite has the same views but Grafana reads
    PostgreSQL)."""
    spec = DatasourceSpec.from_url("postgresql://modelwatch@localhost:5432/modelwatch")
    result = export(out, spec)
    return [*result.dashboards, result.datasource_file, result.provider_file]
