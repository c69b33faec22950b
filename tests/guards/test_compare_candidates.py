"""`modelwatch compare` on three real candidates: an fp32 copy, an fp16 and an int8 build."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.guards.conftest import Suite


def args(suite: Suite, *extra: str) -> list[str]:
    return [
        "compare",
        "--reference", str(suite.models["reference"]),
        "--candidate", str(suite.models["reexport"]),
        "--candidate", str(suite.models["fp16"]),
        "--candidate", str(suite.models["int8_dynamic"]),
        "--preset", "fp32", "--preset", "fp16", "--preset", "int8",
        "--golden", str(suite.golden), "--id-column", "id", "--label-column", "label",
        "--features", ",".join(f"f{i}" for i in range(8)),
        "--batch-size", "1", "--batch-size", "32",
        "--hourly-price", "0.70", "--replicas", "2",
        *extra,
    ]  # fmt: skip


def test_table_per_candidate_with_metric_latency_cost_and_slo(suite: Suite, tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    # A budget no build misses on any machine: the verdict does not depend on speed.
    run = run_cli(*args(suite, "--slo", "latency_p95_ms=60000", "--slo", "metric_drop=5",
                        "--json", str(out)))  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.read_text())
    assert [r["candidate"] for r in rows] == [
        "fraud_reexport.onnx",
        "fraud_fp16.onnx",
        "fraud_int8_dynamic.onnx",
    ]
    assert [r["preset"] for r in rows] == ["fp32", "fp16", "int8"]
    copy = rows[0]
    assert copy["metric_drop"] == 0.0 and copy["reference_metric"] == copy["candidate_metric"]
    for r in rows:
        assert [s["batch_size"] for s in r["latency"]] == [1, 32]
        top = r["latency"][-1]
        # cost per 1,000 = price × replicas per hour / (rows per hour / 1000)
        expected = 0.70 * 2 / (top["rows_per_s"] * 3600) * 1000
        assert abs(r["cost_per_1k"] - expected) <= 1e-12 * max(1.0, expected)
        assert r["meets_slo"] is True and r["missed"] == []
        assert r["metric"] is not None
    table = run_cli(*args(suite, "--slo", "latency_p95_ms=60000")).stdout
    assert "meets SLOs?" in table and table.count(" yes") == 3
    assert "fraud_int8_dynamic.onnx" in table and "$" in table


def test_missed_slos_are_named_and_exit_1(suite: Suite) -> None:
    # 1e-9 ms p95 and $1e-12 per 1,000 predictions: no real build can meet these.
    run = run_cli(*args(suite, "--slo", "latency_p95_ms=0.000000001",
                        "--slo", "cost_per_1k=0.000000000001", "--json", "-"))  # fmt: skip
    assert run.returncode == 1, run.stderr
    rows = json.loads(run.stdout)
    assert all(r["missed"] == ["latency_p95_ms", "cost_per_1k"] for r in rows)


def test_bad_slo_and_preset_counts_exit_2_with_one_line(suite: Suite) -> None:
    bad = run_cli(*args(suite, "--slo", "p95=50"))
    assert bad.returncode == 2 and "--slo 'p95=50': expected KEY=NUMBER" in bad.stderr
    assert "Traceback" not in bad.stderr
    nan = run_cli(*args(suite, "--slo", "latency_p95_ms=fast"))
    assert nan.returncode == 2 and "'fast' is not a number" in nan.stderr
    presets = run_cli("compare", "--reference", str(suite.models["reference"]),
                      "--candidate", str(suite.models["fp16"]), "--preset", "fp16",
                      "--preset", "int8", "--golden", str(suite.golden))  # fmt: skip
    assert presets.returncode == 2 and "one --preset for all candidates" in presets.stderr
