"""Choosing a Kafka client: settings per broker version, where ingest runs, config mistakes."""

from __future__ import annotations

from typing import Any

import pytest

from collectors._kafka_confluent import consumer_settings
from collectors.runner import pipelined
from monitor.config import KafkaSourceConfig, parse_config
from monitor.errors import ConfigError

KAFKA = {"name": "s", "type": "kafka", "bootstrap_servers": ["a:9092", "b:9092"], "topic": "t"}
FILES = {"name": "logs", "type": "jsonl", "path": "/var/log/*.jsonl"}


def source(**extra: Any) -> Any:
    config = parse_config({"models": [{"name": "fraud"}], "sources": [{**KAFKA, **extra}]})
    return config.sources[0]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.9", {"api.version.request": False, "broker.version.fallback": "0.9.0"}),
        ("0.8.2", {"api.version.request": False, "broker.version.fallback": "0.8.2"}),
        ("auto", {}),
        ("2.8.1", {}),
    ],
)
def test_old_brokers_get_librdkafka_fallback_versions(
    version: str, expected: dict[str, object]
) -> None:
    settings = consumer_settings(source(api_version=version, client="confluent-kafka"))
    assert {k: settings[k] for k in expected} == expected
    if not expected:
        assert "api.version.request" not in settings and "broker.version.fallback" not in settings
    assert settings["bootstrap.servers"] == "a:9092,b:9092"
    assert settings["enable.auto.commit"] is False  # offsets live in the database only


@pytest.mark.parametrize(
    ("setting", "extra", "expected"),
    [
        ("auto", {"client": "kafka-python"}, True),
        ("auto", {"client": "confluent-kafka"}, False),
        (True, {"client": "confluent-kafka"}, True),
        (False, {"client": "kafka-python"}, False),
    ],
)
def test_auto_pipeline_runs_a_worker_only_for_kafka_python(
    setting: str | bool, extra: dict[str, str], expected: bool
) -> None:
    assert pipelined(setting, source(**extra)) is expected


def test_files_are_ingested_in_process_unless_asked() -> None:
    config = parse_config({"models": [{"name": "fraud"}], "sources": [FILES]})
    assert (pipelined("auto", config.sources[0]), pipelined(True, config.sources[0])) == (
        False,
        True,
    )


def test_an_unknown_client_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="client"):
        source(client="librdkafka")
    assert isinstance(source(), KafkaSourceConfig) and source().client == "kafka-python"
