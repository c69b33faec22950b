"""The drift report as JSON: dataset verdict, sizes, one row per column/slice/method."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from monitor.detectors import DriftResult
from monitor.detectors.evaluate import dataset_drift
from monitor.reports._output import write_text
from monitor.results.documents import computed_document


def drift_report(
    results: Sequence[DriftResult], n_reference: int, n_current: int
) -> dict[str, Any]:
    """``{"dataset_drift", "n_reference", "n_current", "results": [...]}``."""
    return {
        "dataset_drift": dataset_drift(results),
        "n_reference": int(n_reference),
        "n_current": int(n_current),
        "results": [computed_document(r) for r in results],
    }


def write_json(path: str | Path, document: dict[str, Any]) -> None:
    """Write `document` as indented JSON (stdout for `-`); InputError naming an unwritable path."""
    write_text(path, orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
