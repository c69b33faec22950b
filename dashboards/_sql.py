"""Grafana's PostgreSQL datasource queries as a foundation-SDK dataquery variant.

The SDK ships no dataquery type for `grafana-postgresql-datasource`; this module adds one
(`SQLQuery`), registers it with the SDK runtime so dashboards decode back into typed objects,
and offers a builder for panels' `with_target`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Self

from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import runtime as cogruntime
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.models.dashboard import DataSourceRef

DATASOURCE_TYPE = "grafana-postgresql-datasource"
DEFAULT_DATASOURCE_UID = "modelwatch-postgres"

QueryFormat = Literal["time_series", "table"]


@dataclass
class SQLQuery(cogvariants.Dataquery):
    """One raw SQL target of a panel (Grafana's code-mode SQL editor)."""

    ref_id: str
    raw_sql: str
    format: QueryFormat
    datasource: DataSourceRef | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "refId": self.ref_id,
            "rawSql": self.raw_sql,
            "format": self.format,
            "rawQuery": True,
            "editorMode": "code",
        }
        if self.datasource is not None:
            out["datasource"] = self.datasource.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        fmt = data.get("format", "time_series")
        if fmt not in ("time_series", "table"):
            raise ValueError(f"target {data.get('refId')!r}: unknown format {fmt!r}")
        raw_ds = data.get("datasource")
        ds = DataSourceRef.from_json(raw_ds) if isinstance(raw_ds, dict) else None
        return cls(
            ref_id=str(data["refId"]), raw_sql=str(data["rawSql"]), format=fmt, datasource=ds
        )


class SQL(cogbuilder.Builder[cogvariants.Dataquery]):
    """Builder for an `SQLQuery` target."""

    def __init__(self, raw_sql: str, datasource: DataSourceRef, ref_id: str = "A") -> None:
        self._query = SQLQuery(
            ref_id=ref_id, raw_sql=raw_sql, format="time_series", datasource=datasource
        )

    def table(self) -> Self:
        """Return rows as a table frame (stat, table and state-timeline panels)."""
        self._query.format = "table"
        return self

    def build(self) -> cogvariants.Dataquery:
        return self._query


def datasource_ref(uid: str = DEFAULT_DATASOURCE_UID) -> DataSourceRef:
    """A reference to the PostgreSQL datasource with this uid."""
    return DataSourceRef(type_val=DATASOURCE_TYPE, uid=uid)


_registered = False


def register_sql_variant() -> None:
    """Teach the SDK runtime to decode PostgreSQL targets (idempotent)."""
    global _registered
    if _registered:
        return
    register_default_plugins()
    cogruntime.register_dataquery_variant(
        cogruntime.DataqueryConfig(identifier=DATASOURCE_TYPE, from_json_hook=SQLQuery.from_json)
    )
    _registered = True
