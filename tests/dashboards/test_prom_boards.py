"""The Prometheus dashboard set: valid models, one method per drift series, exported on SQLite.

That each panel's PromQL returns data against a real Prometheus scraping `serve` is tested in
tests/monitor/app/daemon/test_metrics_served.py."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from dashboards._promboards import PANEL_QUERIES, SPECS
from dashboards._render import build_prometheus_dashboards, validate_dashboard
from tests.conftest import run_cli


def test_four_boards_round_trip_through_the_sdk_model() -> None:
    boards = build_prometheus_dashboards()
    assert set(boards) == {
        "modelwatch-prom-drift",
        "modelwatch-prom-outcomes",
        "modelwatch-prom-guards",
        "modelwatch-prom-operations",
    }
    for uid, data in boards.items():
        validate_dashboard(data, uid)
        assert [v["name"] for v in data["templating"]["list"]] == ["model", "version"]
        for panel in data["panels"]:
            assert panel["datasource"] == {"type": "prometheus", "uid": "modelwatch-prometheus"}
            assert panel["targets"] and all("expr" in t for t in panel["targets"])


def test_drift_series_keep_one_method_each() -> None:
    _, _, panels = SPECS["modelwatch-prom-drift"]
    for title, _, queries in panels:
        for expr, legend in queries:
            assert " by " not in expr and "max(" not in expr, title
            if "drift_score" in expr:
                assert "{{method}}" in legend, title


def test_guard_panels_split_by_gate_slice() -> None:
    flips = PANEL_QUERIES["modelwatch-prom-guards/Flip rate by gate slice"]
    assert flips == ['modelwatch_guard_flip_rate{model="$model",version=~"$version"}']
    _, _, panels = SPECS["modelwatch-prom-guards"]
    assert "{{slice}}" in panels[0][2][0][1]


def test_sqlite_export_writes_the_prometheus_set(tmp_path: Path) -> None:
    out = tmp_path / "grafana"
    url = f"sqlite:///{tmp_path / 'mw.db'}"
    result = run_cli(
        "dashboards", "export", str(out), "--database-url", url,
        "--prometheus-url", "http://prom:9090",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Prometheus dashboards only" in result.stdout
    files = sorted(p.name for p in (out / "dashboards").iterdir())
    assert files == [f"{uid}.json" for uid in sorted(SPECS)]
    sources = yaml.safe_load((out / "provisioning/datasources/modelwatch.yaml").read_text())
    [prom] = sources["datasources"]
    assert (prom["type"], prom["url"], prom["uid"]) == (
        "prometheus",
        "http://prom:9090",
        "modelwatch-prometheus",
    )
    board = json.loads((out / "dashboards/modelwatch-prom-guards.json").read_text())
    assert board["uid"] == "modelwatch-prom-guards"


def test_postgresql_export_writes_both_sets(tmp_path: Path) -> None:
    out = tmp_path / "grafana"
    url = "postgresql://mw@db:5432/mw"
    result = run_cli("dashboards", "export", str(out), "--database-url", url)
    assert result.returncode == 0, result.stderr
    names = {p.stem for p in (out / "dashboards").iterdir()}
    assert set(SPECS) < names and "modelwatch-drift" in names
    sources = yaml.safe_load((out / "provisioning/datasources/modelwatch.yaml").read_text())
    assert [d["type"] for d in sources["datasources"]] == [
        "grafana-postgresql-datasource",
        "prometheus",
    ]
