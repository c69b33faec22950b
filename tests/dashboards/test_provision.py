"""Provisioning through grafana-client against a recording Grafana API stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from grafana_client.api import GrafanaApi
from grafana_foundation_sdk.models.dashboard import Dashboard, DataSourceRef

from dashboards._render import build_prometheus_dashboards
from dashboards.boards import BOARDS, drift
from dashboards.datasource import DatasourceSpec, PrometheusDatasource
from dashboards.provision import Provisioner
from monitor.errors import ConflictError, InputError, ServiceError
from tests.conftest import run_cli
from tests.dashboards.grafana_api import FakeGrafana

SPEC = DatasourceSpec.from_url("postgresql://grafana:pw@db.internal:5432/modelwatch")
UIDS = list(BOARDS)
PROM = PrometheusDatasource(url="http://prometheus.internal:9090")
PROM_UIDS = list(build_prometheus_dashboards(PROM.uid))


@pytest.fixture
def grafana() -> Iterator[FakeGrafana]:
    server = FakeGrafana().start()
    try:
        yield server
    finally:
        server.stop()


def provisioner(grafana: FakeGrafana, token: str = "test-token") -> Provisioner:
    api = GrafanaApi.from_url(grafana.url, credential=token, timeout=5)
    return Provisioner(api, attempts=3, backoff_s=0)


def test_first_run_creates_everything_in_order(grafana: FakeGrafana) -> None:
    report = provisioner(grafana).run(SPEC, "modelwatch")
    expected = [
        ("GET", "/api/search"),
        ("POST", "/api/folders"),
        ("GET", "/api/datasources/uid/modelwatch-postgres"),
        ("GET", "/api/datasources/name/modelwatch"),
        ("POST", "/api/datasources"),
    ]
    for uid in UIDS:
        expected += [("GET", f"/api/dashboards/uid/{uid}"), ("POST", "/api/dashboards/db")]
    assert grafana.calls() == expected
    assert report.writes == 2 + len(UIDS)
    folder_uid = next(iter(grafana.state.folders))
    assert {d["folderUid"] for d in grafana.state.dashboards.values()} == {folder_uid}
    ds = grafana.state.datasources["modelwatch-postgres"]
    assert ds["type"] == "grafana-postgresql-datasource" and ds["url"] == "db.internal:5432"
    assert ds["jsonData"]["database"] == "modelwatch" and ds["secureJsonFields"] == {
        "password": True
    }


def test_second_run_makes_no_write(grafana: FakeGrafana) -> None:
    provisioner(grafana).run(SPEC, "modelwatch")
    before = len(grafana.state.requests)
    report = provisioner(grafana).run(SPEC, "modelwatch")
    second = grafana.calls()[before:]
    assert second == [
        ("GET", "/api/search"),
        ("GET", "/api/datasources/uid/modelwatch-postgres"),
        *[("GET", f"/api/dashboards/uid/{uid}") for uid in UIDS],
    ]
    assert report.writes == 0
    assert {a for *_, a in report.actions} == {"unchanged"}


def test_changed_dashboard_is_posted_with_overwrite_as_new_version(
    grafana: FakeGrafana, monkeypatch: pytest.MonkeyPatch
) -> None:
    provisioner(grafana).run(SPEC, "modelwatch")

    def changed(ref: DataSourceRef) -> Dashboard:
        board = drift.build(ref)
        board.description = "changed definition"
        return board

    monkeypatch.setitem(BOARDS, drift.UID, changed)  # type: ignore[index]
    before = len(grafana.state.requests)
    report = provisioner(grafana).run(SPEC, "modelwatch")
    writes = [(m, p, b) for m, p, b in grafana.state.requests[before:] if m != "GET"]
    assert [(m, p) for m, p, _ in writes] == [("POST", "/api/dashboards/db")]
    body = writes[0][2]
    assert body["overwrite"] is True and body["dashboard"]["uid"] == drift.UID
    assert body["dashboard"]["version"] == 1  # the stored version it replaces
    stored = grafana.state.dashboards[drift.UID]["dashboard"]
    assert stored["version"] == 2 and stored["description"] == "changed definition"
    assert len(grafana.state.versions[drift.UID]) == 2
    assert ("dashboard", "modelwatch / Drift", "updated") in report.actions


def test_dashboard_edited_in_grafana_is_restored(grafana: FakeGrafana) -> None:
    provisioner(grafana).run(SPEC, "modelwatch")
    grafana.state.dashboards[drift.UID]["dashboard"]["title"] = "edited by hand"
    report = provisioner(grafana).run(SPEC, "modelwatch")
    assert report.writes == 1
    assert grafana.state.dashboards[drift.UID]["dashboard"]["title"] == "modelwatch / Drift"


def test_changed_datasource_settings_are_updated(grafana: FakeGrafana) -> None:
    provisioner(grafana).run(SPEC, "modelwatch")
    moved = DatasourceSpec.from_url("postgresql://grafana:pw@db2.internal:5433/modelwatch")
    report = provisioner(grafana).run(moved, "modelwatch")
    assert ("datasource", "modelwatch", "updated") in report.actions
    assert grafana.state.datasources["modelwatch-postgres"]["url"] == "db2.internal:5433"


def test_datasource_name_taken_by_another_uid_is_a_conflict(grafana: FakeGrafana) -> None:
    other = DatasourceSpec.from_url("postgresql://g@h/db", uid="someone-elses")
    provisioner(grafana).run(other, "x")
    with pytest.raises(ConflictError, match="uid 'someone-elses'"):
        provisioner(grafana).run(SPEC, "modelwatch")


def test_transient_errors_are_retried_a_bounded_number_of_times(grafana: FakeGrafana) -> None:
    grafana.state.fail_next = [503, 502]
    report = provisioner(grafana).run(SPEC, "modelwatch")
    assert report.writes == 2 + len(UIDS)
    assert grafana.calls()[:3] == [("GET", "/api/search")] * 3

    grafana.state.fail_next = [503] * 3
    with pytest.raises(ServiceError, match="search folders failed after 3 attempt"):
        provisioner(grafana).run(SPEC, "modelwatch")


def test_rejected_credentials_fail_without_retry(grafana: FakeGrafana) -> None:
    with pytest.raises(ServiceError, match="credentials rejected"):
        provisioner(grafana, token="wrong").run(SPEC, "modelwatch")
    assert len(grafana.state.requests) == 1


def test_cli_provision_twice(grafana: FakeGrafana) -> None:
    args = ["dashboards", "provision", "--grafana-url", grafana.url, "--token", "test-token"]
    args += ["--datasource-url", "postgresql://grafana@db:5432/mw", "--folder", "ML"]
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    changes = 3 + len(UIDS) + len(PROM_UIDS)  # folder, two datasources, both sets
    assert "folder ML: created" in first.stdout and f"{changes} change(s)" in first.stdout
    assert set(grafana.state.dashboards) == {*UIDS, *PROM_UIDS}
    second = run_cli(*args)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().endswith("0 change(s)")


def test_cli_bad_token_is_one_line_exit_2(grafana: FakeGrafana) -> None:
    out = run_cli(
        "dashboards", "provision", "--grafana-url", grafana.url, "--token", "nope",
        "--datasource-url", "postgresql://grafana@db:5432/mw",
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "credentials rejected (401)" in out.stderr


def test_unreachable_grafana_is_a_service_error_after_bounded_retries() -> None:
    from tests.services.net import free_port

    api = GrafanaApi.from_url(f"http://127.0.0.1:{free_port()}", credential="t", timeout=2)
    with pytest.raises(ServiceError, match="search folders failed after 2 attempt"):
        Provisioner(api, attempts=2, backoff_s=0).run(SPEC, "modelwatch")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--token", "t", "--user", "u", "--password", "p"], "either --token or --user"),
        (["--user", "u"], "--user needs --password"),
        (["--password", "p"], "--password needs --user"),
    ],
)
def test_cli_credential_mistakes_are_one_line_errors(flags: list[str], message: str) -> None:
    out = run_cli(
        "dashboards", "provision", "--grafana-url", "http://127.0.0.1:9", *flags,
        "--datasource-url", "postgresql://grafana@db:5432/mw",
        env={"GRAFANA_TOKEN": "", "GRAFANA_PASSWORD": ""},
    )  # fmt: skip
    assert out.returncode == 2 and message in out.stderr


def test_prometheus_set_is_provisioned_next_to_the_sql_set(grafana: FakeGrafana) -> None:
    report = provisioner(grafana).run(SPEC, "modelwatch", PROM)
    assert report.writes == 3 + len(UIDS) + len(PROM_UIDS)
    prom = grafana.state.datasources[PROM.uid]
    assert (prom["type"], prom["url"]) == ("prometheus", "http://prometheus.internal:9090")
    assert set(grafana.state.dashboards) == {*UIDS, *PROM_UIDS}
    for uid in PROM_UIDS:  # every Prometheus panel reads the provisioned datasource
        panels = grafana.state.dashboards[uid]["dashboard"]["panels"]
        assert {p["datasource"]["uid"] for p in panels if "datasource" in p} == {PROM.uid}
    assert provisioner(grafana).run(SPEC, "modelwatch", PROM).writes == 0
    moved = PrometheusDatasource(url="http://prom2:9090")
    again = provisioner(grafana).run(SPEC, "modelwatch", moved)
    assert again.actions.count(("datasource", PROM.name, "updated")) == 1 and again.writes == 1
    assert grafana.state.datasources[PROM.uid]["url"] == "http://prom2:9090"


def test_cli_provision_on_sqlite_pushes_the_prometheus_set_only(
    grafana: FakeGrafana, tmp_path: Path
) -> None:
    out = run_cli(
        "dashboards", "provision", "--grafana-url", grafana.url, "--token", "test-token",
        "--database-url", f"sqlite:///{tmp_path / 'mw.db'}",
        "--prometheus-url", "http://prom.example:9090",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Prometheus dashboards only" in out.stdout
    assert f"{2 + len(PROM_UIDS)} change(s)" in out.stdout
    assert list(grafana.state.datasources) == [PROM.uid]
    assert grafana.state.datasources[PROM.uid]["url"] == "http://prom.example:9090"
    assert set(grafana.state.dashboards) == set(PROM_UIDS)


def test_nothing_to_provision_is_an_input_error(grafana: FakeGrafana) -> None:
    with pytest.raises(InputError, match="nothing to provision"):
        provisioner(grafana).run(None, "modelwatch")
    assert grafana.calls() == []
