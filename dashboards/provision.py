"""`modelwatch dashboards provision`: folder, datasource and dashboards through Grafana's API.

Idempotent: each object is read first and written only when missing or different, so a second
run makes no write. A changed dashboard is posted with `overwrite` and the stored version, and
Grafana keeps the previous one in its version history. Every call has the client's timeout and
is retried a bounded number of times on timeouts, connection errors and 5xx answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from dashboards._render import build_dashboards, build_prometheus_dashboards
from dashboards.datasource import DatasourceSpec, PrometheusDatasource
from monitor.errors import ConflictError, InputError, ServiceError

T = TypeVar("T")
Action = Literal["created", "updated", "unchanged"]
# Grafana adds these when it stores a dashboard; they are not part of what we define.
SERVER_KEYS = ("id", "version")


@dataclass
class ProvisionReport:
    """One line per object: what provisioning did to it."""

    actions: list[tuple[str, str, Action]] = field(default_factory=list)

    def add(self, kind: str, name: str, action: Action) -> None:
        self.actions.append((kind, name, action))

    @property
    def writes(self) -> int:
        return sum(1 for *_, action in self.actions if action != "unchanged")


def _status(exc: Exception) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _retryable(exc: Exception) -> bool:
    status = _status(exc)
    # grafana-client reports timeouts and transport errors with status 0.
    return status is None or status == 0 or status >= 500


class Provisioner:
    """Creates or updates modelwatch's objects through an injected `grafana_client.GrafanaApi`."""

    def __init__(self, api: Any, attempts: int = 3, backoff_s: float = 0.5) -> None:
        if attempts < 1:
            raise ValueError("attempts must be >= 1")
        self.api = api
        self.attempts = attempts
        self.backoff_s = backoff_s

    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        for attempt in range(1, self.attempts + 1):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # grafana-client and niquests share no base class
                if _status(exc) == 401:
                    raise ServiceError(f"grafana: {what}: credentials rejected (401)") from None
                if not _retryable(exc) or attempt == self.attempts:
                    raise ServiceError(
                        f"grafana: {what} failed after {attempt} attempt(s): {exc}"
                    ) from None
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    def _get_or_none(self, what: str, fn: Callable[..., T], *args: Any) -> T | None:
        try:
            return fn(*args)
        except Exception as exc:
            if _status(exc) == 404:
                return None
            return self._call(what, fn, *args)

    def folder(self, title: str, report: ProvisionReport) -> str:
        """The uid of the folder titled `title`, created when missing."""
        hits = self._call(
            "search folders", self.api.search.search_dashboards, query=title, type_="dash-folder"
        )
        for hit in hits:
            if hit.get("title") == title:
                report.add("folder", title, "unchanged")
                return str(hit["uid"])
        created = self._call("create folder", self.api.folder.create_folder, title)
        report.add("folder", title, "created")
        return str(created["uid"])

    def datasource(
        self, spec: DatasourceSpec | PrometheusDatasource, report: ProvisionReport
    ) -> None:
        """Create the datasource, or update it when its connection settings differ."""
        ds = self.api.datasource
        current = self._get_or_none("get datasource", ds.get_datasource_by_uid, spec.uid)
        if current is None:
            named = self._get_or_none("get datasource", ds.get_datasource_by_name, spec.name)
            if named is not None:
                hint = (
                    f"pass --datasource-uid {named.get('uid')} or another --datasource-name"
                    if isinstance(spec, DatasourceSpec)
                    else "rename or delete that datasource"
                )
                raise ConflictError(
                    f"grafana: a datasource named {spec.name!r} already exists with uid "
                    f"{named.get('uid')!r}; {hint}"
                )
            self._call("create datasource", ds.create_datasource, spec.api_payload())
            report.add("datasource", spec.name, "created")
            return
        wanted = spec.api_payload()
        compared = [k for k in ("name", "type", "url", "user") if k in wanted]
        same = all(current.get(k) == wanted[k] for k in compared)
        json_data = current.get("jsonData") or {}
        same = same and all(json_data.get(k) == v for k, v in spec.json_data().items())
        if same:
            report.add("datasource", spec.name, "unchanged")
            return
        self._call("update datasource", ds.update_datasource_by_uid, spec.uid, wanted)
        report.add("datasource", spec.name, "updated")

    def dashboard(self, data: dict[str, Any], folder_uid: str, report: ProvisionReport) -> None:
        """Create the dashboard, or overwrite it as a new version when it differs."""
        uid, title = str(data["uid"]), str(data["title"])
        stored = self._get_or_none("get dashboard", self.api.dashboard.get_dashboard, uid)
        body: dict[str, Any] = {"dashboard": dict(data), "folderUid": folder_uid}
        if stored is None:
            body["overwrite"] = False
            body["message"] = "created by modelwatch dashboards provision"
            self._call("create dashboard", self.api.dashboard.update_dashboard, body)
            report.add("dashboard", title, "created")
            return
        current = {k: v for k, v in stored["dashboard"].items() if k not in SERVER_KEYS}
        in_folder = stored.get("meta", {}).get("folderUid") == folder_uid
        if current == data and in_folder:
            report.add("dashboard", title, "unchanged")
            return
        body["dashboard"]["version"] = stored["dashboard"].get("version")
        body["overwrite"] = True
        body["message"] = "updated by modelwatch dashboards provision"
        self._call("update dashboard", self.api.dashboard.update_dashboard, body)
        report.add("dashboard", title, "updated")

    def run(
        self,
        spec: DatasourceSpec | None,
        folder_title: str,
        prometheus: PrometheusDatasource | None = None,
    ) -> ProvisionReport:
        """Provision the folder, then each datasource given and its dashboard set: the SQL set
        over PostgreSQL (`spec`), the Prometheus set (`prometheus`)."""
        if spec is None and prometheus is None:
            raise InputError("dashboards: nothing to provision (no PostgreSQL and no Prometheus)")
        report = ProvisionReport()
        folder_uid = self.folder(folder_title, report)
        boards: dict[str, dict[str, Any]] = {}
        if spec is not None:
            self.datasource(spec, report)
            boards |= build_dashboards(spec.uid)
        if prometheus is not None:
            self.datasource(prometheus, report)
            boards |= build_prometheus_dashboards(prometheus.uid)
        for data in boards.values():
            self.dashboard(data, folder_uid, report)
        return report
