"""Scheduled golden replay, below the daemon: config, the hard time budget, changed golden sets,
and divergence from an earlier pass on the same content."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from guards import GateRequest, GuardVerdict, load_golden, preset, record_gate, run_gate
from guards.schedule import ReplaySpec, check_golden, divergence, replay
from monitor.config import GuardsConfig, parse_config
from monitor.config.guards import GoldenSetConfig
from monitor.errors import ConfigError, InputError
from tests.guards.conftest import Suite

FEATURES = [f"f{i}" for i in range(8)]


def config(schedule: dict[str, Any], models: tuple[str, ...] = ("fraud",)) -> Any:
    return parse_config({
        "models": [{"name": m} for m in models],
        "guards": {"golden_sets": {"fraud": {"path": "g.parquet"}}, "schedule": schedule},
    })  # fmt: skip


@pytest.mark.parametrize(
    ("schedule", "named"),
    [
        ({"ghost": {"golden_set": "fraud"}}, "'ghost' is not a configured model"),
        ({"fraud": {"golden_set": "nope"}}, "no golden set named 'nope'"),
        ({"fraud": {"evry": "1h"}}, "evry"),
        ({"fraud": {"every": "0s"}}, "at least 1s"),
        ({"fraud": {"action": "promote"}}, "action"),
        ({"fraud": {"time_budget": "10m"}}, "shorter than scheduler.lease_s"),
    ],
)
def test_a_bad_schedule_stops_the_config_naming_the_key(
    schedule: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        config(schedule)


def test_a_schedule_defaults_to_the_models_golden_set_hourly_without_action() -> None:
    entry = config({"fraud": {}}).guards.schedule["fraud"]
    assert (entry.golden_set, entry.every.total_seconds(), entry.action) == (None, 3600.0, "none")
    assert entry.versions == "active" and entry.time_budget.total_seconds() == 240.0


def test_a_replay_past_its_time_budget_is_killed(suite: Suite) -> None:
    spec = ReplaySpec(
        "fraud", "2", suite.models["reference"], suite.models["int8_good"],
        GoldenSetConfig(path=str(suite.golden), preset="int8"), GuardsConfig(), "int8",
    )  # fmt: skip
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="exceeded its time budget of 0.3s"):
        replay(spec, 0.3)
    assert time.monotonic() - started < 10  # killed, not waited for


def test_a_golden_set_that_changed_or_vanished_fails_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "golden.csv"
    path.write_text("a,b\n1,2\n")
    digest = check_golden(GoldenSetConfig(path=str(path)))
    assert check_golden(GoldenSetConfig(path=str(path), sha256=digest)) == digest
    path.write_text("a,b\n1,3\n")
    with pytest.raises(InputError, match=f"^{path}: golden set sha256 .* does not match"):
        check_golden(GoldenSetConfig(path=str(path), sha256=digest))
    path.unlink()
    with pytest.raises(InputError, match=f"^{path}: golden set not found"):
        check_golden(GoldenSetConfig(path=str(path)))


def _verdict(suite: Suite, candidate: str) -> GuardVerdict:
    golden = load_golden(suite.golden, id_column="id", label_column="label",
                         slice_by=["segment"], features=FEATURES)  # fmt: skip
    request = GateRequest(suite.models["reference"], suite.models[candidate], golden,
                          preset("int8"), latency_batch_sizes=())  # fmt: skip
    return run_gate(request)


def test_a_failure_on_content_that_passed_before_is_a_divergence(
    suite: Suite, sqlite_engine: Engine, tmp_path: Path
) -> None:
    passing, failing = _verdict(suite, "int8_good"), _verdict(suite, "int8_bad")
    assert (passing.verdict, failing.verdict) == ("pass", "fail")
    same = (suite.models["reference"], suite.models["int8_good"], suite.golden)
    first = record_gate(sqlite_engine, "fraud", "2", passing, same)
    # The same files judged otherwise: what a driver or provider change looks like.
    again = record_gate(sqlite_engine, "fraud", "2", failing, same)
    found = divergence(sqlite_engine, again.gate_run_id)
    assert found is not None and found.previous_run_id == first.gate_run_id
    assert divergence(sqlite_engine, first.gate_run_id) is None  # a pass never diverges

    other = tmp_path / "golden.parquet"
    other.write_bytes(suite.golden.read_bytes() + b"\0")  # other content: a new baseline
    changed = record_gate(sqlite_engine, "fraud", "2", failing, (*same[:2], other))
    assert divergence(sqlite_engine, changed.gate_run_id) is None
