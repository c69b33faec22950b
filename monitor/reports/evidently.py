"""Evidently's own DataDriftPreset report, for users who want its HTML (imported lazily)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from monitor.errors import InputError
from monitor.profiles import ColumnSpec


def run_data_drift(
    reference: Any, current: Any, specs: dict[str, ColumnSpec], columns: Sequence[str]
) -> Any:
    """Run Evidently's DataDriftPreset on raw frames; returns its snapshot."""
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    numeric = [c for c in columns if specs[c].kind == "numeric"]
    categorical = [c for c in columns if specs[c].kind == "categorical"]
    definition = DataDefinition(numerical_columns=numeric, categorical_columns=categorical)
    ref = Dataset.from_pandas(reference[list(columns)], data_definition=definition)
    cur = Dataset.from_pandas(current[list(columns)], data_definition=definition)
    return Report([DataDriftPreset()]).run(cur, ref)


def evidently_scores(snapshot: Any) -> dict[str, float]:
    """Per-column drift scores from a DataDriftPreset snapshot."""
    out: dict[str, float] = {}
    for metric in snapshot.dict()["metrics"]:
        column = metric.get("config", {}).get("column")
        if column is not None and isinstance(metric.get("value"), float | int):
            out[str(column)] = float(metric["value"])
    return out


def write_evidently_html(snapshot: Any, path: str | Path) -> None:
    """Save Evidently's HTML report."""
    try:
        snapshot.save_html(str(path))
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror}") from None
