"""`modelwatch dashboards export`: Grafana file provisioning for the datasource and dashboards."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dashboards._render import build_dashboards, build_prometheus_dashboards
from dashboards.datasource import DatasourceSpec, PrometheusDatasource
from monitor.errors import InputError

DEFAULT_FOLDER = "modelwatch"


@dataclass(frozen=True)
class ExportResult:
    """What was written, relative to the export directory."""

    dashboards: tuple[Path, ...]
    datasource_file: Path
    provider_file: Path


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror}") from None


def provider_document(folder: str, dashboards_path: str) -> dict[str, Any]:
    """A dashboard provider reading the exported JSON files into one folder."""
    provider = {
        "name": "modelwatch",
        "orgId": 1,
        "folder": folder,
        "type": "file",
        "disableDeletion": False,
        "allowUiUpdates": False,
        "updateIntervalSeconds": 60,
        "options": {"path": dashboards_path, "foldersFromFilesStructure": False},
    }
    return {"apiVersion": 1, "providers": [provider]}


def export(
    directory: Path,
    datasource: DatasourceSpec | None,
    folder: str = DEFAULT_FOLDER,
    dashboards_path: str | None = None,
    prometheus: PrometheusDatasource | None = PrometheusDatasource(),  # noqa: B008 - frozen
) -> ExportResult:
    """Write `dashboards/*.json` and `provisioning/{datasources,dashboards}/modelwatch.yaml`.

    Both sets by default: the SQL dashboards over PostgreSQL (`datasource`; None skips them,
    e.g. on SQLite) and the Prometheus dashboards (`prometheus`; None skips them).
    `dashboards_path` is where Grafana will find the JSON files (default: the absolute path of
    `DIRECTORY/dashboards`, right when Grafana runs on this machine).
    """
    if datasource is None and prometheus is None:
        raise InputError("dashboards: nothing to export (no PostgreSQL and no Prometheus)")
    board_dir = directory / "dashboards"
    boards: dict[str, dict[str, Any]] = {}
    entries: list[dict[str, Any]] = []
    if datasource is not None:
        boards |= build_dashboards(datasource.uid)
        entries.append(datasource.provisioning_entry())
    if prometheus is not None:
        boards |= build_prometheus_dashboards(prometheus.uid)
        entries.append(prometheus.provisioning_entry())
    written = []
    for uid, data in boards.items():
        path = board_dir / f"{uid}.json"
        _write(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
        written.append(path)
    ds_file = directory / "provisioning" / "datasources" / "modelwatch.yaml"
    ds_doc = {"apiVersion": 1, "datasources": entries}
    _write(ds_file, yaml.safe_dump(ds_doc, sort_keys=False))
    provider_file = directory / "provisioning" / "dashboards" / "modelwatch.yaml"
    target = dashboards_path or str(board_dir.resolve())
    _write(provider_file, yaml.safe_dump(provider_document(folder, target), sort_keys=False))
    return ExportResult(tuple(written), ds_file, provider_file)
