"""The Grafana PostgreSQL datasource modelwatch's dashboards read, derived from a database URL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from dashboards._sql import DATASOURCE_TYPE, DEFAULT_DATASOURCE_UID
from monitor.errors import ConfigError

DEFAULT_DATASOURCE_NAME = "modelwatch"
# File provisioning never holds the password; Grafana expands this from its environment.
PASSWORD_ENV = "MODELWATCH_GRAFANA_DB_PASSWORD"


@dataclass(frozen=True)
class DatasourceSpec:
    """Where Grafana connects to read the `mw_*` views."""

    host: str
    database: str
    user: str
    password: str | None = None
    sslmode: str = "disable"
    uid: str = DEFAULT_DATASOURCE_UID
    name: str = DEFAULT_DATASOURCE_NAME

    @classmethod
    def from_url(
        cls, url: str, uid: str = DEFAULT_DATASOURCE_UID, name: str = DEFAULT_DATASOURCE_NAME
    ) -> DatasourceSpec:
        """Parse `postgresql://user[:password]@host[:port]/database[?sslmode=...]`."""
        try:
            parsed = make_url(url)
        except ArgumentError:
            raise ConfigError(f"datasource url: cannot parse {url!r}") from None
        if parsed.get_backend_name() != "postgresql":
            raise ConfigError(
                f"datasource url: Grafana reads the dashboards' views from PostgreSQL; got "
                f"{parsed.get_backend_name()!r} (pass --datasource-url postgresql://...)"
            )
        if not parsed.host or not parsed.database or not parsed.username:
            raise ConfigError(f"datasource url: {parsed!r} needs a user, a host and a database")
        sslmode = parsed.query.get("sslmode", "disable")
        return cls(
            host=f"{parsed.host}:{parsed.port or 5432}",
            database=parsed.database,
            user=parsed.username,
            password=parsed.password,
            sslmode=sslmode if isinstance(sslmode, str) else sslmode[0],
            uid=uid,
            name=name,
        )

    def api_payload(self) -> dict[str, Any]:
        """The body Grafana's `POST /api/datasources` expects (password as a secure field)."""
        payload: dict[str, Any] = {
            "uid": self.uid,
            "name": self.name,
            "type": DATASOURCE_TYPE,
            "access": "proxy",
            "url": self.host,
            "user": self.user,
            "jsonData": self.json_data(),
        }
        if self.password:
            payload["secureJsonData"] = {"password": self.password}
        return payload

    def json_data(self) -> dict[str, Any]:
        return {"database": self.database, "sslmode": self.sslmode, "postgresVersion": 1500}

    def provisioning_entry(self) -> dict[str, Any]:
        """The entry for a Grafana `provisioning/datasources/*.yaml` file."""
        entry = {k: v for k, v in self.api_payload().items() if k != "secureJsonData"}
        entry["secureJsonData"] = {"password": f"$__env{{{PASSWORD_ENV}}}"}
        entry["editable"] = False
        return entry


@dataclass(frozen=True)
class PrometheusDatasource:
    """The Prometheus that scrapes modelwatch, as Grafana reaches it (the Prometheus set)."""

    url: str = "http://localhost:9090"
    uid: str = "modelwatch-prometheus"
    name: str = "modelwatch-prometheus"

    def api_payload(self) -> dict[str, Any]:
        """The body Grafana's `POST /api/datasources` expects."""
        return {
            "uid": self.uid,
            "name": self.name,
            "type": "prometheus",
            "access": "proxy",
            "url": self.url,
            "jsonData": self.json_data(),
        }

    def json_data(self) -> dict[str, Any]:
        return {"httpMethod": "POST"}

    def provisioning_entry(self) -> dict[str, Any]:
        """The entry for a Grafana `provisioning/datasources/*.yaml` file."""
        entry = self.api_payload()
        entry["editable"] = False
        return entry
