"""Adapter for KServe / Seldon inference-logger CloudEvents (structured JSON mode).

The logger emits a request and a response as two CloudEvents with the same `id`: types ending in
`.inference.request` / `.inference.response` (KServe `org.kubeflow.serving.…`, Seldon
`io.seldon.serving.…`). Each payload is one :class:`Half`; the ingestor pairs them (see
`collectors._pairing`). Bodies are the V1 protocol (`{"instances": [...]}` →
`{"predictions": [...]}`) or the Open Inference (V2) protocol (`{"inputs": [{"name", "data",
...}]}` → `{"outputs": [...]}`). `format_options`: `model` (default: the event's
`inferenceservicename` extension), `model_version` (default: the event's `modelversion`
extension, else "unknown"), `feature_names` for positional inputs (default f0, f1, ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from collectors._base import DecodeError, Half
from collectors._json import loads
from collectors._validate import parse_timestamp


class CloudEventsAdapter:
    """Inference-logger CloudEvents → halves → modelwatch events."""

    name = "cloudevents"

    def __init__(self, options: Mapping[str, Any]) -> None:
        unknown = set(options) - {"model", "model_version", "feature_names"}
        if unknown:
            raise DecodeError(
                "bad_options", f"format 'cloudevents': unknown options {sorted(unknown)}"
            )
        self.model = options.get("model")
        self.version = options.get("model_version")
        self.feature_names = [str(n) for n in options.get("feature_names", [])]

    def decode(self, payload: bytes) -> Sequence[Any]:
        event = loads(payload)
        if not isinstance(event, dict):
            raise DecodeError("wrong_type", "cloudevent: expected a JSON object")
        kind = str(event.get("type", "")).rsplit(".", 1)[-1]
        if kind not in ("request", "response") or not event.get("id"):
            raise DecodeError("missing_field", "cloudevent: needs id and type *.request/*.response")
        if "time" not in event:
            raise DecodeError("missing_field", "cloudevent: time: required")
        ts = parse_timestamp(event["time"])
        body = {
            "data": event.get("data"),
            "model": self.model or event.get("inferenceservicename"),
            "version": self.version or event.get("modelversion") or "unknown",
        }
        return [Half(str(event["id"]), kind, ts, body)]

    def combine(self, request: Half, response: Half) -> Sequence[Any]:
        try:
            return self._combine(request, response)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            if isinstance(exc, DecodeError):
                raise
            # A body of the wrong shape (a number where a list belongs, a tensor without a
            # name) is a dead letter, like any other malformed payload.
            raise DecodeError(
                "wrong_type", f"cloudevent {request.pair_id}: malformed body: {exc!r}"[:300]
            ) from None

    def _combine(self, request: Half, response: Half) -> Sequence[Any]:
        rows = self._inputs(request.body["data"])
        outputs = self._outputs(response.body["data"])
        if not rows and not outputs:  # no event, yet not nothing: said, like an empty payload
            raise DecodeError("empty", f"cloudevent {request.pair_id}: no instances or inputs")
        if len(rows) != len(outputs):
            raise DecodeError(
                "wrong_type",
                f"cloudevent {request.pair_id}: {len(rows)} inputs, {len(outputs)} outputs",
            )
        single = len(rows) == 1
        return [
            {
                "request_id": request.pair_id if single else f"{request.pair_id}:{i}",
                "model": request.body["model"],
                "model_version": str(request.body["version"]),
                "timestamp": request.ts,
                "features": features,
                "prediction": prediction,
            }
            for i, (features, prediction) in enumerate(zip(rows, outputs, strict=True))
        ]

    def _inputs(self, data: Any) -> list[dict[str, Any]]:
        if isinstance(data, dict) and "instances" in data:
            return [self._row(r) for r in data["instances"]]
        if isinstance(data, dict) and "inputs" in data:
            tensors = data["inputs"]
            if len(tensors) == 1:
                return [self._row(self._flat(tensors[0]))]
            return [{str(t["name"]): self._flat(t)[0] for t in tensors}]
        raise DecodeError("wrong_type", "cloudevent request: expected instances or inputs")

    def _outputs(self, data: Any) -> list[Any]:
        if isinstance(data, dict) and "predictions" in data:
            return [{"output": p} if isinstance(p, list) else p for p in data["predictions"]]
        if isinstance(data, dict) and "outputs" in data:
            flat = self._flat(data["outputs"][0])
            return [flat[0] if len(flat) == 1 else {"output": flat}]
        raise DecodeError("wrong_type", "cloudevent response: expected predictions or outputs")

    def _flat(self, tensor: Mapping[str, Any]) -> list[Any]:
        values = tensor.get("data")
        while isinstance(values, list) and values and isinstance(values[0], list):
            values = [v for row in values for v in row]
        return values if isinstance(values, list) else [values]

    def _row(self, row: Any) -> dict[str, Any]:
        if isinstance(row, dict):
            return row
        values = row if isinstance(row, list) else [row]
        names = self.feature_names or [f"f{i}" for i in range(len(values))]
        if len(names) != len(values):
            raise DecodeError(
                "wrong_type", f"cloudevent request: {len(values)} values for {len(names)} names"
            )
        return dict(zip(names, values, strict=True))
