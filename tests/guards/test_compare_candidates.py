"""`modelwatch compare` on three real candidates: an fp32 copy, an fp16 and an int8 build."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from guards._memory import peak_memory
from guards.candidates import parse_prices, throughput_at_slo
from guards.registry import version_settings
from guards.results import LatencyStats
from monitor.errors import InputError
from monitor.storage import make_engine
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
        "--hourly-price", "0.70", "--hourly-price", "fraud_fp16=0.35", "--replicas", "2",
        *extra,
    ]  # fmt: skip


def test_table_per_candidate_with_metric_latency_cost_and_slo(suite: Suite, tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    # A budget no build misses on any machine: the verdict does not depend on speed.
    # peak memory (a child process per build) is measured in the store-settings test below
    run = run_cli(*args(suite, "--slo", "latency_p95_ms=60000", "--slo", "metric_drop=5",
                        "--no-memory", "--json", str(out)))  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.read_text())
    assert [r["candidate"] for r in rows] == [
        "fraud_fp32.onnx",
        "fraud_reexport.onnx",
        "fraud_fp16.onnx",
        "fraud_int8_dynamic.onnx",
    ]
    assert [r["role"] for r in rows] == ["reference", "candidate", "candidate", "candidate"]
    assert [r["preset"] for r in rows] == [None, "fp32", "fp16", "int8"]
    reference, copy = rows[0], rows[1]
    assert reference["verdict"] == "reference" and reference["metric_drop"] == 0.0
    assert copy["metric_drop"] == 0.0 and copy["reference_metric"] == copy["candidate_metric"]
    assert reference["candidate_metric"] == copy["reference_metric"]
    # one price for all, a named one for the fp16 build
    assert [r["hourly_price"] for r in rows] == [0.70, 0.70, 0.35, 0.70]
    for r, name in zip(rows, ["reference", "reexport", "fp16", "int8_dynamic"], strict=True):
        assert [s["batch_size"] for s in r["latency"]] == [1, 32]
        top = r["latency"][-1]
        # cost per 1,000 = price × replicas per hour / (rows per hour / 1000)
        expected = r["hourly_price"] * 2 / (top["rows_per_s"] * 3600) * 1000
        assert abs(r["cost_per_1k"] - expected) <= 1e-12 * max(1.0, expected)
        assert r["meets_slo"] is True and r["missed"] == []
        assert r["metric"] is not None
        assert r["file_bytes"] == os.path.getsize(suite.models[name])
        assert r["peak_rss_bytes"] is None  # --no-memory
        # 60 s p95 bound: the largest batch meets it, at that batch's throughput
        at_slo = {"batch_size": 32, "rows_per_s": top["rows_per_s"], "p95_ms": top["p95_ms"],
                  "latency_slo_ms": 60000}  # fmt: skip
        assert r["throughput_at_slo"] == at_slo
    table = run_cli(*args(suite, "--slo", "latency_p95_ms=60000", "--no-memory")).stdout
    assert "meets SLOs?" in table and table.count(" yes") == 4
    assert "fraud_fp32.onnx (reference)" in table and "rows/s at SLO" in table
    assert "fraud_int8_dynamic.onnx" in table and "$" in table


def test_missed_slos_are_named_and_exit_1(suite: Suite) -> None:
    # 1e-9 ms p95 and $1e-12 per 1,000 predictions: no real build can meet these.
    run = run_cli(*args(suite, "--slo", "latency_p95_ms=0.000000001", "--no-memory",
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
    for price, why in (("fast", "'fast' is not a positive number"),
                       ("fraud_gpu=0.5", "'fraud_gpu' is not a build")):  # fmt: skip
        run = run_cli(*args(suite, "--hourly-price", price))
        assert run.returncode == 2 and f"--hourly-price '{price}': {why}" in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1


def test_prices_per_build_by_file_name_stem_or_reference() -> None:
    names = ["ref.onnx", "a.onnx", "b.onnx"]
    assert parse_prices([], names) == {}
    assert parse_prices(["0.5", "a=0.25", "reference=1"], names) == {
        "ref.onnx": 1.0, "a.onnx": 0.25, "b.onnx": 0.5,
    }  # fmt: skip
    assert parse_prices(["b.onnx=2"], names) == {"b.onnx": 2.0}
    for bad in ("a=0", "a=-1", "a=nan", "a=", "c=1"):
        with pytest.raises(InputError, match="--hourly-price"):
            parse_prices([bad], names)


def _stats(*p95: float) -> list[LatencyStats]:
    sizes = [1, 8, 32, 128][: len(p95)]
    return [
        LatencyStats(b, ms / 2, ms, ms * 2, b * 1000 / ms) for b, ms in zip(sizes, p95, strict=True)
    ]


@pytest.mark.parametrize(
    ("p95", "slo", "batch"),
    [
        ((2.0, 5.0, 12.0, 40.0), 20.0, 32),  # the largest batch within the bound
        ((2.0, 5.0, 12.0, 40.0), 40.0, 128),  # the bound itself meets it
        ((2.0, 5.0, 12.0, 40.0), 1.0, None),  # even one row misses
        ((2.0, 25.0, 12.0, 15.0), 20.0, 1),  # a miss stops the search: later passes are noise
    ],
)
def test_throughput_at_slo_is_the_largest_batch_before_the_first_miss(
    p95: tuple[float, ...], slo: float, batch: int | None
) -> None:
    stats = _stats(*p95)
    found = throughput_at_slo(list(reversed(stats)), slo)  # the order given does not matter
    if batch is None:
        assert found is None
        return
    assert found is not None and found.batch_size == batch
    chosen = next(s for s in stats if s.batch_size == batch)
    assert (found.rows_per_s, found.p95_ms, found.latency_slo_ms) == (
        chosen.rows_per_s,
        chosen.p95_ms,
        slo,
    )


@pytest.mark.slow
def test_store_settings_writes_each_build_to_the_registry_in_one_step(
    suite: Suite, tmp_path: Path
) -> None:
    db = ["--database-url", f"sqlite:///{tmp_path / 'mw.db'}"]
    assert run_cli("db", "upgrade", *db).returncode == 0
    # the registry and the model's latency SLO (throughput at the SLO) come from the config
    config = tmp_path / "mw.yaml"
    config.write_text(f"database_url: {db[1]}\nmodels:\n  - name: fraud\n"
                      "    slo: {latency_p95_ms: 60000}\n")  # fmt: skip
    fp16 = str(suite.models["fp16"])
    assert run_cli("models", "register", "--model", "fraud", "--version", "2", fp16,
                   *db).returncode == 0  # fmt: skip
    run = run_cli(
        "compare", "--reference", str(suite.models["reference"]), "--candidate", fp16,
        "--preset", "fp16", "--golden", str(suite.golden), "--id-column", "id",
        "--label-column", "label", "--features", ",".join(f"f{i}" for i in range(8)),
        "--batch-size", "1", "--hourly-price", "fraud_fp16=0.35", "--model", "fraud",
        "--store-settings", "--json", "-", "--config", str(config),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "stored settings of fraud fraud_fp32, 2" in run.stderr
    reference, candidate = json.loads(run.stdout)
    engine = make_engine(db[1])
    # the registered fp16 build keeps its version; the reference is registered by its stem
    stored = version_settings(engine, "fraud", "2")
    assert (stored["precision"], stored["hourly_price"], stored["replicas"]) == ("fp16", 0.35, 1)
    measured = stored["compare"]
    assert measured["file_bytes"] == candidate["file_bytes"] == os.path.getsize(fp16)
    # each build's own child process: some memory on the host, no device here (CPU)
    assert measured["peak_rss_bytes"] == candidate["peak_rss_bytes"] > 0
    assert reference["peak_rss_bytes"] > 0
    assert measured["device_memory_bytes"] is candidate["device_memory_bytes"] is None
    assert measured["throughput_at_slo"] == candidate["throughput_at_slo"]
    assert candidate["throughput_at_slo"]["latency_slo_ms"] == 60000
    assert measured["cost_per_1k"] == candidate["cost_per_1k"] and measured["verdict"] == "pass"
    ref = version_settings(engine, "fraud", "fraud_fp32")
    assert "hourly_price" not in ref and ref["compare"]["role"] == "reference"
    assert ref["compare"]["peak_rss_bytes"] == reference["peak_rss_bytes"]
    engine.dispose()
    # another file whose stem is a version already registered with a different file: stops
    # before anything is measured, naming both
    other = tmp_path / "fraud_fp32.onnx"
    other.write_bytes(suite.models["reference"].read_bytes())
    clash = run_cli("compare", "--reference", str(other), "--candidate", fp16, "--golden",
                    str(suite.golden), "--model", "fraud", "--store-settings", "--config",
                    str(config))  # fmt: skip
    assert clash.returncode == 2 and "version 'fraud_fp32' holds" in clash.stderr
    alone = run_cli("compare", "--reference", str(other), "--candidate", fp16, "--golden",
                    str(suite.golden), "--store-settings")  # fmt: skip
    assert alone.returncode == 2 and "--store-settings needs --model" in alone.stderr


@pytest.mark.slow
def test_a_build_whose_child_fails_has_no_memory_figure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    feeds = {"features": np.zeros((4, 8), np.float32)}
    assert peak_memory([broken], feeds, ["CPUExecutionProvider"]) == [None]
    assert "peak memory of broken.onnx: the child failed" in caplog.text
