"""The registry of modelwatch dashboards, by uid."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from grafana_foundation_sdk.models.dashboard import Dashboard as DashboardModel
from grafana_foundation_sdk.models.dashboard import DataSourceRef

from dashboards.boards import drift, guards, operations, outcomes, releases

Builder = Callable[[DataSourceRef], DashboardModel]

BOARDS: Mapping[str, Builder] = {
    drift.UID: drift.build,
    outcomes.UID: outcomes.build,
    guards.UID: guards.build,
    operations.UID: operations.build,
    releases.UID: releases.build,
}

__all__ = ["BOARDS", "Builder"]
