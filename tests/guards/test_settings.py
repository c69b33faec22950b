"""Optimization settings recorded with a model version: CLI, registry, `models list`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.guards.conftest import Suite
from tests.guards.test_cli import gate_args


def test_settings_are_stored_with_the_version_and_listed(suite: Suite, tmp_path: Path) -> None:
    db = ["--database-url", f"sqlite:///{tmp_path / 'mw.db'}"]
    assert run_cli("db", "upgrade", *db).returncode == 0
    ref, fp16 = str(suite.models["reference"]), str(suite.models["fp16"])
    assert (
        run_cli("models", "register", "--model", "fraud", "--version", "1", ref, *db).returncode
        == 0
    )
    reg = run_cli(
        "models", "register", "--model", "fraud", "--version", "2", fp16,
        "--precision", "fp16", "--quantization", "static qdq, 512 calibration rows",
        "--batching", "max 64, 5 ms", "--runtime", "ort 1.31 CUDA",
        "--meta", "image=registry/fraud:2", "--meta", "owner=ml", *db,
    )  # fmt: skip
    assert reg.returncode == 0, reg.stderr
    listed = json.loads(run_cli("models", "list", "--json", *db).stdout)
    versions = {v["version"]: v["settings"] for v in listed[0]["versions"]}
    assert versions["1"] == {}
    assert versions["2"] == {
        "precision": "fp16",
        "quantization": "static qdq, 512 calibration rows",
        "batching": "max 64, 5 ms",
        "runtime": "ort 1.31 CUDA",
        "meta": {"image": "registry/fraud:2", "owner": "ml"},
    }
    table = run_cli("models", "list", *db).stdout
    assert "2: fp16; static qdq, 512 calibration rows; max 64, 5 ms; ort 1.31 CUDA" in table
    assert "image=registry/fraud:2" in table
    # the gate report of a registered version says how it was optimized
    md, js = tmp_path / "gate.md", tmp_path / "gate.json"
    gate = run_cli(*gate_args(suite, "fp16", "fp16"), "--no-latency", "--model", "fraud",
                   "--version", "2", "--markdown", str(md), "--json", str(js), *db)  # fmt: skip
    assert gate.returncode == 0, gate.stderr
    assert json.loads(js.read_text())["run"]["settings"]["runtime"] == "ort 1.31 CUDA"
    assert "Optimization settings: precision fp16; quantization static qdq" in md.read_text()


def test_bad_settings_exit_2_naming_the_flag(suite: Suite, tmp_path: Path) -> None:
    db = ["--database-url", f"sqlite:///{tmp_path / 'mw.db'}"]
    assert run_cli("db", "upgrade", *db).returncode == 0
    ref = str(suite.models["reference"])
    base = ["models", "register", "--model", "m", "--version", "1", ref]
    meta = run_cli(*base, "--meta", "no-equals-sign", *db)
    assert meta.returncode == 2 and "--meta 'no-equals-sign': expected key=value" in meta.stderr
    assert "Traceback" not in meta.stderr
    precision = run_cli(*base, "--precision", "fp8", *db)
    assert precision.returncode == 2 and "--precision" in precision.stderr
    listed = json.loads(run_cli("models", "list", "--json", *db).stdout)
    assert listed == []  # nothing half-registered
