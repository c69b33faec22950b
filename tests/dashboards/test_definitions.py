"""Dashboards as code: valid against the SDK model, querying only the mw_* views."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from dashboards._render import build_dashboards, validate_dashboard
from dashboards.views import VIEW_COLUMNS
from monitor.errors import InputError
from tests.conftest import run_cli

BOARDS = build_dashboards()
TARGETS = [
    (uid, panel["title"], panel["type"], target)
    for uid, board in BOARDS.items()
    for panel in board["panels"]
    for target in panel["targets"]
]
RELATIONS = re.compile(r"\b(?:FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


def test_expected_dashboards_and_variables() -> None:
    assert sorted(BOARDS) == [
        "modelwatch-drift",
        "modelwatch-guards",
        "modelwatch-operations",
        "modelwatch-outcomes",
        "modelwatch-releases",
    ]
    variables = {uid: [v["name"] for v in b["templating"]["list"]] for uid, b in BOARDS.items()}
    assert variables["modelwatch-drift"] == ["model", "version", "slice", "granularity"]
    assert variables["modelwatch-outcomes"] == [
        "model",
        "version",
        "slice",
        "metric",
        "granularity",
    ]
    assert variables["modelwatch-guards"] == ["model", "version"]
    assert variables["modelwatch-releases"] == ["model", "version"]


@pytest.mark.parametrize("uid", sorted(BOARDS))
def test_every_dashboard_round_trips_through_the_sdk_model(uid: str) -> None:
    data = BOARDS[uid]
    model = validate_dashboard(copy.deepcopy(data), uid)
    assert model.uid == uid
    assert [p["id"] for p in data["panels"]] == list(range(1, len(data["panels"]) + 1))


def test_a_broken_dashboard_fails_validation() -> None:
    broken = copy.deepcopy(BOARDS["modelwatch-drift"])
    broken["panels"][0]["targets"][0]["format"] = "graph"
    with pytest.raises(InputError, match="unknown format 'graph'"):
        validate_dashboard(broken, "drift.json")


@pytest.mark.parametrize(("uid", "title", "kind", "target"), TARGETS, ids=lambda x: str(x)[:40])
def test_panels_query_only_views_with_grafana_macros(
    uid: str, title: str, kind: str, target: dict[str, object]
) -> None:
    sql = str(target["rawSql"])
    views = set(RELATIONS.findall(sql))
    assert views and views <= set(VIEW_COLUMNS), f"{uid}/{title} reads a table"
    # Current positions and each version's build settings are shown whatever the range.
    if views not in ({"mw_source_lag"}, {"mw_model_settings"}):
        assert "$__timeFilter(time)" in sql
    if any("model" in VIEW_COLUMNS[v] for v in views):
        assert "${model:sqlstring}" in sql
    assert target["datasource"] == {
        "type": "grafana-postgresql-datasource",
        "uid": "modelwatch-postgres",
    }
    if kind == "timeseries":
        assert target["format"] == "time_series"
        # Drift and outcomes group by the chosen granularity (1h, 1d, 7d), the others by zoom.
        step = (
            "$granularity" if uid in ("modelwatch-drift", "modelwatch-outcomes") else "$__interval"
        )
        assert f"$__timeGroupAlias(time, {step})" in sql
    if kind in ("stat", "table"):
        assert target["format"] == "table"


def test_variables_query_views() -> None:
    for board in BOARDS.values():
        for var in board["templating"]["list"]:
            if var["type"] == "interval":
                assert var["query"] == "1h,1d,7d"
                continue
            assert set(RELATIONS.findall(var["query"])) <= set(VIEW_COLUMNS)


def test_cli_export_writes_grafana_file_provisioning(tmp_path: Path) -> None:
    out = run_cli(
        "dashboards", "export", str(tmp_path / "grafana"),
        "--datasource-url", "postgresql://grafana:s3cret@db:5433/mw?sslmode=require",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    root = tmp_path / "grafana"
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == [
        "dashboards/modelwatch-drift.json",
        "dashboards/modelwatch-guards.json",
        "dashboards/modelwatch-operations.json",
        "dashboards/modelwatch-outcomes.json",
        "dashboards/modelwatch-prom-drift.json",
        "dashboards/modelwatch-prom-guards.json",
        "dashboards/modelwatch-prom-operations.json",
        "dashboards/modelwatch-prom-outcomes.json",
        "dashboards/modelwatch-releases.json",
        "provisioning/dashboards/modelwatch.yaml",
        "provisioning/datasources/modelwatch.yaml",
    ]
    for path in (root / "dashboards").glob("*.json"):
        validate_dashboard(json.loads(path.read_text()), str(path))
    ds_text = (root / "provisioning/datasources/modelwatch.yaml").read_text()
    assert "s3cret" not in ds_text
    ds = yaml.safe_load(ds_text)["datasources"][0]
    assert ds["uid"] == "modelwatch-postgres" and ds["url"] == "db:5433"
    assert ds["jsonData"]["sslmode"] == "require"
    assert ds["secureJsonData"]["password"] == "$__env{MODELWATCH_GRAFANA_DB_PASSWORD}"
    provider = yaml.safe_load((root / "provisioning/dashboards/modelwatch.yaml").read_text())
    assert provider["providers"][0]["options"]["path"] == str((root / "dashboards").resolve())


def test_cli_export_on_sqlite_writes_only_the_prometheus_set(tmp_path: Path) -> None:
    out = run_cli("dashboards", "export", str(tmp_path), "--database-url", "sqlite:///x.db")
    assert out.returncode == 0, out.stderr
    assert "Prometheus dashboards only" in out.stdout
    assert not (tmp_path / "dashboards/modelwatch-drift.json").exists()
    assert (tmp_path / "dashboards/modelwatch-prom-drift.json").exists()


def test_cli_export_refuses_a_non_postgresql_datasource_url(tmp_path: Path) -> None:
    out = run_cli("dashboards", "export", str(tmp_path), "--datasource-url", "mysql://u@h/d")
    assert out.returncode == 2
    assert "--datasource-url" in out.stderr and "Traceback" not in out.stderr
