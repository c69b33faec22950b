"""`modelwatch collect` / `status` against real sources: one contract for files and Kafka."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.collectors.conftest import payloads, write_config
from tests.conftest import run_cli
from tests.services.kafka import KafkaBroker

BAD = [b'{"request_id": "r', b"\xff\xfe\xfd", orjson.dumps({"model": "fraud"})]


def _source(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    """A configured source of `kind` holding 500 valid events and 3 malformed ones."""
    data = payloads(250) + BAD + payloads(250, start=250)
    if kind == "jsonl":
        (tmp_path / "logs").mkdir()
        (tmp_path / "logs" / "a.jsonl").write_bytes(b"".join(p + b"\n" for p in data))
        return {"name": "logs", "type": "jsonl", "path": str(tmp_path / "logs" / "*.jsonl")}
    broker: KafkaBroker = request.getfixturevalue("kafka")
    topic: str = request.getfixturevalue("topic")
    broker.produce(topic, data)
    return {
        "name": "stream",
        "type": "kafka",
        "bootstrap_servers": broker.bootstrap,
        "topic": topic,
        "group_id": f"g-{topic}",
        "api_version": "0.9",
        "client": "confluent-kafka" if kind == "kafka-confluent" else "kafka-python",
    }


@pytest.mark.parametrize("kind", ["jsonl", "kafka", "kafka-confluent"])
def test_collect_until_caught_up_then_status(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, database_url: str
) -> None:
    source = _source(kind, tmp_path, request)
    cfg = write_config(tmp_path / "mw.yaml", database_url, [source])
    assert run_cli("db", "upgrade", "--config", str(cfg)).returncode == 0
    for _ in range(2):  # a second run finds nothing new: counts must not move
        done = run_cli("collect", "--config", str(cfg), "--until-caught-up", timeout=120)
        assert done.returncode == 0, done.stderr
    out = run_cli("status", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    src = status["sources"][0]
    assert (src["name"], src["type"], src["events"], src["dead_letters"], src["late"]) == (
        source["name"],
        source["type"],
        500,
        3,
        0,
    )
    assert src["lag"] == 0
    assert status["models"] == [{"name": "fraud", "version": "1", "events": 500, "windows": 1}]
    # The table a person reads has the same counters, labels included (docs/reference/cli.md).
    table = run_cli("status", "--config", str(cfg)).stdout.splitlines()
    assert table[0].split() == ["source", "type", "events", "labels", "dead", "late", "lag"]
    row = table[1].split()
    assert row[2:] == [str(src[k]) for k in ("events", "labels", "dead_letters", "late", "lag")]


def test_collect_config_errors_are_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "mw.yaml"
    cfg.write_text("sources:\n  - {name: s, type: jsonl, path: x, formatt: y}\n")
    out = run_cli("collect", "--config", str(cfg))
    assert out.returncode == 2
    assert "unknown key 'sources[0].formatt'" in out.stderr and "Traceback" not in out.stderr
    cfg.write_text(
        f"database_url: sqlite:///{tmp_path}/x.db\nmodels: [{{name: m}}]\n"
        "sources:\n  - {name: s, type: jsonl, path: x, format: avro}\n"
    )
    # Checked at load against the adapter registry, naming the key.
    out = run_cli("collect", "--config", str(cfg))
    assert out.returncode == 2 and "unknown format 'avro'" in out.stderr
    assert "'sources[0].format'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_jsonl_with_a_future_event_huge_values_and_deep_json_collects_every_normal_line(
    tmp_path: Path, database_url: str
) -> None:
    from tests.collectors.conftest import T0, event

    lines = [orjson.dumps(event(0, ts=T0 + 200 * 365 * 86400))]  # 200 years ahead
    for i in range(1, 150):
        e = event(i)
        if i % 10 == 0:  # huge numbers (that once poisoned a window) and booleans are values
            e["features"].update(amount=[1e200, 1e308][i % 20 // 10], is_new=i % 20 == 0)
        lines.append(orjson.dumps(e))
    lines.append(b'{"model": "fraud", "x": ' + b"[" * 300 + b"]" * 300 + b"}")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    source = {"name": "logs", "type": "jsonl", "path": str(tmp_path / "logs" / "*.jsonl")}
    cfg = write_config(tmp_path / "mw.yaml", database_url, [source])
    assert run_cli("db", "upgrade", "--config", str(cfg)).returncode == 0
    for _ in range(2):  # a restart finds stored profiles it can still merge into
        done = run_cli("collect", "--config", str(cfg), "--until-caught-up", timeout=120)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    out = run_cli("status", "--config", str(cfg), "--json")
    src = json.loads(out.stdout)["sources"][0]
    assert (src["events"], src["dead_letters"], src["late"]) == (149, 2, 0)
