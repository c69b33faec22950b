"""`modelwatch dashboards export`: Grafana file provisioning for the datasource and dashboards."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dashboards.datasource import DatasourceSpec
from dashboards.render import build_dashboards
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
    datasource: DatasourceSpec,
    folder: str = DEFAULT_FOLDER,
    dashboards_path: str | None = None,
) -> ExportResult:
    """Write `dashboards/*.json` and `provisioning/{datasources,dashboards}/modelwatch.yaml`.

    `dashboards_path` is where Grafana will find the JSON files (default: the absolute path of
    `DIRECTORY/dashboards`, right when Grafana runs on this machine).
    """
    board_dir = directory / "dashboards"
    written = []
    for uid, data in build_dashboards(datasource.uid).items():
        path = board_dir / f"{uid}.json"
        _write(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
        written.append(path)
    ds_file = directory / "provisioning" / "datasources" / "modelwatch.yaml"
    ds_doc = {"apiVersion": 1, "datasources": [datasource.provisioning_entry()]}
    _write(ds_file, yaml.safe_dump(ds_doc, sort_keys=False))
    provider_file = directory / "provisioning" / "dashboards" / "modelwatch.yaml"
    target = dashboards_path or str(board_dir.resolve())
    _write(provider_file, yaml.safe_dump(provider_document(folder, target), sort_keys=False))
    return ExportResult(tuple(written), ds_file, provider_file)
