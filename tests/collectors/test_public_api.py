"""The collectors package's public surface, pinned; adapters registry behaviour; config keys."""

from __future__ import annotations

import base64

import orjson
import pytest

import collectors
from collectors import make_adapter, register_adapter
from collectors._adapters import NativeAdapter
from monitor.config import parse_config
from monitor.errors import ConfigError, RegistryError

PINNED = {
    "CE_BATCH",
    "CE_STRUCTURED",
    "Accepted",
    "Adapter",
    "Backlog",
    "HttpIntake",
    "IntakeFull",
    "RequestBody",
    "check_idempotency_key",
    "check_request",
    "read_backlog",
    "RequestDeadLetter",
    "RequestState",
    "count_dead_letters",
    "keyed_request_state",
    "request_dead_letters",
    "request_state",
    "stored_key",
    "Batch",
    "BatchResult",
    "CollectStatus",
    "DecodeError",
    "Ingestor",
    "LabelEvent",
    "ModelStatus",
    "PredictionEvent",
    "ProfileBackend",
    "RawRecord",
    "Rejection",
    "RunState",
    "Source",
    "SourceStatus",
    "adapter_names",
    "collect_status",
    "make_adapter",
    "register_adapter",
    "run",
    "ScrapeError",  # resource samples from a Prometheus endpoint (the daemon's scrape jobs)
    "scrape_resources",
}


def test_all_is_pinned() -> None:
    assert set(collectors.__all__) == PINNED


def test_registering_a_name_twice_raises() -> None:
    make_adapter("modelwatch")
    with pytest.raises(RegistryError, match="already registered"):
        register_adapter("modelwatch", NativeAdapter)


def test_sagemaker_capture_csv_and_json_become_events() -> None:
    adapter = make_adapter(
        "sagemaker",
        {"model": "fraud", "model_version": "2", "feature_names": ["amount", "country"]},
    )
    line = {
        "captureData": {
            "endpointInput": {
                "observedContentType": "text/csv",
                "mode": "INPUT",
                "data": "12.5,de\n3,fr",
                "encoding": "CSV",
            },
            "endpointOutput": {
                "observedContentType": "text/csv",
                "mode": "OUTPUT",
                "data": base64.b64encode(b"0.9\n0.1").decode(),
                "encoding": "BASE64",
            },
        },
        "eventMetadata": {"eventId": "e1", "inferenceTime": "2026-01-01T00:00:00Z"},
        "eventVersion": "0",
    }
    events = adapter.decode(orjson.dumps(line))
    assert [(e["request_id"], e["features"], e["prediction"]) for e in events] == [
        ("e1:0", {"amount": 12.5, "country": "de"}, 0.9),
        ("e1:1", {"amount": 3.0, "country": "fr"}, 0.1),
    ]
    line["captureData"]["endpointInput"] = {  # type: ignore[index]
        "observedContentType": "application/json",
        "encoding": "JSON",
        "data": '{"instances": [{"amount": 1, "country": "de"}]}',
    }
    line["captureData"]["endpointOutput"] = {  # type: ignore[index]
        "observedContentType": "application/json",
        "encoding": "JSON",
        "data": '{"predictions": [[0.2, 0.8]]}',
    }
    (one,) = adapter.decode(orjson.dumps(line))
    assert one["features"] == {"amount": 1, "country": "de"}
    assert one["prediction"] == {"output": [0.2, 0.8]} and one["model_version"] == "2"


def test_collect_config_keys_are_validated() -> None:
    cfg = parse_config(
        {"collect": {"window": "15m", "allowed_lateness": 30, "label_horizon": "2d"}}, env={}
    )
    assert cfg.collect.window.total_seconds() == 900
    assert cfg.collect.allowed_lateness.total_seconds() == 30
    assert cfg.collect.label_horizon.days == 2
    with pytest.raises(ConfigError, match="collect.window"):
        parse_config({"collect": {"window": "soon"}}, source="mw.yaml", env={})
    with pytest.raises(ConfigError, match="collect.window"):
        parse_config({"collect": {"window": 0}}, source="mw.yaml", env={})
    with pytest.raises(ConfigError, match="api_version"):
        parse_config(
            {
                "sources": [
                    {
                        "name": "k",
                        "type": "kafka",
                        "bootstrap_servers": "h:1",
                        "topic": "t",
                        "api_version": "zero",
                    }
                ]
            },
            env={},
        )
