"""Adapter for Amazon SageMaker data-capture JSONL lines.

A capture line holds `captureData.endpointInput` and `.endpointOutput`, each with `data`,
`encoding` (CSV, JSON or BASE64) and `observedContentType`; `eventMetadata` has `eventId` and
`inferenceTime`. Capture files carry no model name, so the source's `format_options` give
`model`, `model_version` and, for CSV inputs, `feature_names` (default f0, f1, ...).
A CSV input with several rows yields one event per row (request ids `<eventId>:<row>`).
"""

from __future__ import annotations

import base64
import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from collectors._base import DecodeError
from collectors._json import loads


def _number_or_text(cell: str) -> float | str | None:
    cell = cell.strip()
    if cell == "":
        return None
    try:
        return float(cell)
    except ValueError:
        return cell


def _numbers(row: list[str]) -> list[float]:
    """A CSV output row of several cells: the scores of a multi-output model, all numbers."""
    try:
        return [float(cell) for cell in row]
    except ValueError:
        raise DecodeError(
            "wrong_type",
            f"endpointOutput.data: a row of several cells must be numbers: {row!r}"[:300],
        ) from None


class SageMakerAdapter:
    """SageMaker data capture → modelwatch events."""

    name = "sagemaker"

    def __init__(self, options: Mapping[str, Any]) -> None:
        unknown = set(options) - {"model", "model_version", "feature_names"}
        if unknown or "model" not in options:
            raise DecodeError(
                "bad_options",
                "format 'sagemaker' needs format_options.model (and optionally model_version, "
                f"feature_names); unknown: {sorted(unknown)}",
            )
        self.model = str(options["model"])
        self.version = str(options.get("model_version", "unknown"))
        self.feature_names = [str(n) for n in options.get("feature_names", [])]

    def decode(self, payload: bytes) -> Sequence[Any]:
        line = loads(payload)
        try:
            capture = line["captureData"]
            meta = line.get("eventMetadata", {})
            event_id = str(meta["eventId"])
            when = meta["inferenceTime"]
            inputs = self._rows(capture["endpointInput"], "endpointInput")
            outputs = self._rows(capture["endpointOutput"], "endpointOutput")
        except (KeyError, TypeError) as exc:
            raise DecodeError("missing_field", f"sagemaker capture: missing {exc}") from None
        if len(outputs) != len(inputs):
            raise DecodeError(
                "wrong_type", f"sagemaker capture: {len(inputs)} input rows, {len(outputs)} outputs"
            )
        single = len(inputs) == 1
        return [
            {
                "request_id": event_id if single else f"{event_id}:{i}",
                "model": self.model,
                "model_version": self.version,
                "timestamp": when,
                "features": features,
                "prediction": prediction,
            }
            for i, (features, prediction) in enumerate(zip(inputs, outputs, strict=True))
        ]

    def _rows(self, part: Mapping[str, Any], where: str) -> list[Any]:
        data = self._text(part, where)
        content_type = str(part.get("observedContentType", "")).lower()
        if "json" in content_type or str(part.get("encoding", "")).upper() == "JSON":
            return self._json_rows(loads(data.encode()), where)
        try:  # newline=None: a bare CR ends a row, as in a CSV file opened in text mode
            rows = [r for r in csv.reader(io.StringIO(data, newline=None)) if r]
        except csv.Error as e:
            raise DecodeError("wrong_type", f"{where}.data: not CSV ({e})") from None
        if where == "endpointOutput":
            return [_number_or_text(r[0]) if len(r) == 1 else {"output": _numbers(r)} for r in rows]
        return [self._features([_number_or_text(c) for c in r]) for r in rows]

    def _text(self, part: Mapping[str, Any], where: str) -> str:
        data = part["data"]
        if str(part.get("encoding", "")).upper() == "BASE64":
            try:
                return base64.b64decode(data, validate=True).decode("utf-8")
            except (ValueError, TypeError):  # binascii.Error, UnicodeDecodeError, non-ASCII
                raise DecodeError("wrong_type", f"{where}.data: invalid BASE64") from None
        if not isinstance(data, str):
            raise DecodeError("wrong_type", f"{where}.data: expected string")
        return data

    def _json_rows(self, obj: Any, where: str) -> list[Any]:
        if isinstance(obj, dict):
            for key in ("instances", "predictions", "outputs"):
                if key in obj:
                    obj = obj[key]
                    break
            else:
                return [obj if where == "endpointInput" else obj.get("prediction", obj)]
        if not isinstance(obj, list):
            obj = [obj]
        if where == "endpointOutput":
            return [{"output": o} if isinstance(o, list) else o for o in obj]
        return [o if isinstance(o, dict) else self._features(o) for o in obj]

    def _features(self, row: Any) -> dict[str, Any]:
        values = row if isinstance(row, list) else [row]
        names = self.feature_names or [f"f{i}" for i in range(len(values))]
        if len(names) != len(values):
            raise DecodeError(
                "wrong_type", f"endpointInput: {len(values)} values for {len(names)} feature_names"
            )
        return dict(zip(names, values, strict=True))
