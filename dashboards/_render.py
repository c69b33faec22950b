"""Dashboards to JSON and back: the foundation SDK's model is the schema a dashboard must fit."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import Dashboard as DashboardModel

from dashboards import _promboards as promboards
from dashboards._sql import DEFAULT_DATASOURCE_UID, datasource_ref, register_sql_variant
from dashboards.boards import BOARDS
from monitor.errors import InputError


def dashboard_json(dashboard: DashboardModel) -> dict[str, Any]:
    """The JSON document Grafana stores for a dashboard."""
    data: dict[str, Any] = json.loads(json.dumps(dashboard, cls=JSONEncoder))
    return data


def validate_dashboard(data: dict[str, Any], source: str = "<dashboard>") -> DashboardModel:
    """Decode JSON into the SDK's typed model; it must encode back to the same document."""
    register_sql_variant()
    try:
        model = DashboardModel.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{source}: not a valid dashboard: {exc}") from None
    again = dashboard_json(model)
    if again != data:
        differing = sorted(k for k in set(data) | set(again) if data.get(k) != again.get(k))
        raise InputError(
            f"{source}: dashboard does not round-trip through the model; differing keys: "
            f"{', '.join(differing)}"
        )
    return model


def build_dashboards(datasource_uid: str = DEFAULT_DATASOURCE_UID) -> dict[str, dict[str, Any]]:
    """Every registered SQL (PostgreSQL) dashboard as validated JSON, by uid."""
    return _built(BOARDS, datasource_ref(datasource_uid))


def build_prometheus_dashboards(
    datasource_uid: str = promboards.DEFAULT_DATASOURCE_UID,
) -> dict[str, dict[str, Any]]:
    """Every Prometheus-datasource dashboard as validated JSON, by uid."""
    return _built(promboards.PROM_BOARDS, promboards.datasource_ref(datasource_uid))


def _built(
    boards: Mapping[str, Callable[[Any], DashboardModel]], ref: Any
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for uid, build in boards.items():
        model = build(ref)
        # Stable panel ids: links and Grafana's "view panel" URLs survive re-provisioning.
        for number, panel in enumerate(model.panels or [], start=1):
            panel.id_val = number
        data = dashboard_json(model)
        validate_dashboard(data, uid)
        out[uid] = data
    return out
