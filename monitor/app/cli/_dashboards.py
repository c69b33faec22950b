"""`modelwatch dashboards`: export Grafana provisioning files or provision through the API."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from monitor.app.cli._options import database_options
from monitor.errors import ConfigError

if TYPE_CHECKING:
    from dashboards.datasource import DatasourceSpec

DEFAULT_TIMEOUT_S = 10.0


def _sql_datasource(
    datasource_url: str | None,
    database_url: str | None,
    config_path: Path | None,
    uid: str,
    name: str,
) -> DatasourceSpec | None:
    """The PostgreSQL datasource of the SQL set; None (and a note) when the database is not
    PostgreSQL and no --datasource-url was given: then only the Prometheus set applies."""
    from dashboards.datasource import DatasourceSpec
    from monitor.app.cli._common import resolve_database_url

    url = datasource_url or resolve_database_url(database_url, config_path)
    if datasource_url is not None or url.startswith("postgresql"):
        return DatasourceSpec.from_url(url, uid=uid, name=name)
    click.echo("database is not PostgreSQL: the Prometheus dashboards only")
    return None


def prometheus_option(func: click.decorators.FC) -> click.decorators.FC:
    """--prometheus-url, shared by export and provision."""
    return click.option(
        "--prometheus-url",
        default="http://localhost:9090",
        show_default=True,
        help="The Prometheus scraping modelwatch, as Grafana reaches it (Prometheus dashboards).",
    )(func)


def datasource_options(func: click.decorators.FC) -> click.decorators.FC:
    """Add the datasource options shared by export and provision."""
    for option in reversed(
        [
            click.option(
                "--datasource-url",
                metavar="URL",
                help="PostgreSQL URL as Grafana reaches it (default: the database URL).",
            ),
            click.option(
                "--datasource-uid",
                default="modelwatch-postgres",
                show_default=True,
                help="Uid of the PostgreSQL datasource the SQL dashboards query.",
            ),
            click.option(
                "--datasource-name",
                default="modelwatch",
                show_default=True,
                help="Name of the PostgreSQL datasource in Grafana.",
            ),
            click.option("--folder", default="modelwatch", show_default=True, help="Folder name."),
        ]
    ):
        func = option(func)
    return database_options(func)


@click.group()
def dashboards() -> None:
    """Grafana dashboards over the mw_* SQL views."""


@dashboards.command("export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@datasource_options
@click.option(
    "--dashboards-path",
    metavar="PATH",
    help="Where Grafana reads the JSON files (default: DIRECTORY/dashboards, absolute).",
)
@prometheus_option
def export_cmd(
    directory: Path,
    database_url: str | None,
    config_path: Path | None,
    datasource_url: str | None,
    datasource_uid: str,
    datasource_name: str,
    folder: str,
    dashboards_path: str | None,
    prometheus_url: str,
) -> None:
    """Write Grafana file provisioning (datasources, dashboard provider, dashboards) to DIRECTORY.

    The Prometheus dashboards always; the SQL dashboards too when the database (or
    --datasource-url) is PostgreSQL. On SQLite only the Prometheus set is written."""
    from dashboards.datasource import PrometheusDatasource
    from dashboards.export import export

    spec = _sql_datasource(
        datasource_url, database_url, config_path, datasource_uid, datasource_name
    )
    prometheus = PrometheusDatasource(url=prometheus_url)
    result = export(directory, spec, folder, dashboards_path, prometheus)
    for path in (*result.dashboards, result.datasource_file, result.provider_file):
        click.echo(f"wrote {path}")


@dashboards.command("provision")
@click.option("--grafana-url", required=True, metavar="URL", help="e.g. http://grafana:3000")
@click.option("--token", envvar="GRAFANA_TOKEN", help="Service account token ($GRAFANA_TOKEN).")
@click.option("--user", "user", help="Basic-auth user (instead of --token).")
@click.option("--password", envvar="GRAFANA_PASSWORD", help="Basic-auth password.")
@click.option("--timeout", default=DEFAULT_TIMEOUT_S, show_default=True, help="Seconds per call.")
@click.option("--retries", default=3, show_default=True, help="Attempts per call.")
@datasource_options
@prometheus_option
def provision_cmd(
    grafana_url: str,
    token: str | None,
    user: str | None,
    password: str | None,
    timeout: float,
    retries: int,
    database_url: str | None,
    config_path: Path | None,
    datasource_url: str | None,
    datasource_uid: str,
    datasource_name: str,
    folder: str,
    prometheus_url: str,
) -> None:
    """Create or update the folder, datasources and dashboards in a running Grafana.

    The Prometheus datasource and dashboards always; the PostgreSQL datasource and the SQL
    dashboards too when the database (or --datasource-url) is PostgreSQL."""
    from grafana_client.api import GrafanaApi

    from dashboards.datasource import PrometheusDatasource
    from dashboards.provision import Provisioner

    if token and user:
        raise ConfigError("grafana: pass either --token or --user/--password, not both")
    if user and not password:
        raise ConfigError("grafana: --user needs --password (or $GRAFANA_PASSWORD)")
    if password and not user and not token:
        raise ConfigError("grafana: --password needs --user")
    if retries < 1 or timeout <= 0:
        raise ConfigError("grafana: --retries must be >= 1 and --timeout > 0")
    spec = _sql_datasource(
        datasource_url, database_url, config_path, datasource_uid, datasource_name
    )
    credential: str | tuple[str, str] | None = token
    if user and password:
        credential = (user, password)
    api = GrafanaApi.from_url(grafana_url, credential=credential, timeout=timeout)
    prometheus = PrometheusDatasource(url=prometheus_url)
    report = Provisioner(api, attempts=retries).run(spec, folder, prometheus)
    for kind, name, action in report.actions:
        click.echo(f"{kind} {name}: {action}")
    click.echo(f"{report.writes} change(s)")
