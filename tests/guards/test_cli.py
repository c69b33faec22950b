"""`modelwatch gate`, `models` and `rollback` as a user runs them: exit codes and files."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
from sqlalchemy import func, select

from monitor.storage import GateRun, make_engine, transaction
from tests.conftest import run_cli
from tests.guards.conftest import Suite


def gate_args(suite: Suite, candidate: str, preset: str, golden: Path | None = None) -> list[str]:
    return [
        "gate",
        "--reference", str(suite.models["reference"]),
        "--candidate", str(suite.models[candidate]),
        "--golden", str(golden or suite.golden),
        "--preset", preset,
        "--id-column", "id",
        "--label-column", "label",
        "--slice-by", "segment",
        "--slice-by", "region",
    ]  # fmt: skip


def test_pass_exits_0_without_gpu_noise(suite: Suite) -> None:
    out = run_cli(*gate_args(suite, "fp16", "fp16"), "--batch-size", "8")
    assert out.returncode == 0, out.stderr
    assert "Gate verdict: PASS" in out.stdout
    assert "CUDA" not in out.stderr and "TensorRT" not in out.stderr


def test_fail_exits_1_and_writes_three_reports(suite: Suite, tmp_path: Path) -> None:
    paths = {kind: tmp_path / f"verdict.{kind}" for kind in ("json", "html", "md")}
    out = run_cli(
        *gate_args(suite, "int8_bad", "int8"),
        "--no-latency",
        "--json", str(paths["json"]),
        "--html", str(paths["html"]),
        "--markdown", str(paths["md"]),
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    assert "FAIL: flip_rate[probabilities] [segment=high]" in out.stdout
    doc = json.loads(paths["json"].read_text())
    assert doc["verdict"] == "fail" and doc["latency"] == {}
    html, md = paths["html"].read_text(), paths["md"].read_text()
    assert "http://" not in html and "https://" not in html and "<script" not in html
    for text in (html, md):
        assert "segment=high" in text and "FAIL" in text


def test_flags_override_the_preset(suite: Suite) -> None:
    relaxed = ["--max-slice-flip-rate", "0.5", "--max-slice-metric-drop", "50",
               "--max-metric-drop", "5", "--no-latency"]  # fmt: skip
    out = run_cli(*gate_args(suite, "int8_bad", "int8"), *relaxed)
    assert out.returncode == 0, out.stdout + out.stderr


def test_small_golden_set_is_inconclusive_exit_3(suite: Suite, tmp_path: Path) -> None:
    small = tmp_path / "small.csv"
    pd.read_parquet(suite.golden).head(150).to_csv(small, index=False)
    out = run_cli(*gate_args(suite, "int8_good", "int8", small), "--no-latency")
    assert out.returncode == 3, out.stdout + out.stderr
    assert "INCONCLUSIVE" in out.stdout


def test_mismatched_models_exit_2_with_one_line(suite: Suite) -> None:
    args = gate_args(suite, "reexport", "fp32")
    args[args.index("--reference") + 1] = str(suite.regressor)
    out = run_cli(*args)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "different inputs" in out.stderr


def test_missing_column_exits_2_naming_it(suite: Suite) -> None:
    out = run_cli(*gate_args(suite, "reexport", "fp32"), "--features", "f0,f1,nope")
    assert out.returncode == 2 and "nope" in out.stderr and "Traceback" not in out.stderr


def test_registry_commands_and_auto_rollback(suite: Suite, tmp_path: Path) -> None:
    db = ["--database-url", f"sqlite:///{tmp_path / 'mw.db'}"]
    assert run_cli("db", "upgrade", *db).returncode == 0
    # Version 1 is the re-export the first gate judges (a gate checks the registered hash).
    ref, bad = str(suite.models["reexport"]), str(suite.models["int8_bad"])
    old_style = run_cli("models", "register", "fraud", "1", ref, "--activate", *db)
    assert old_style.returncode == 0 and "deprecated: `models register MODEL" in old_style.stderr
    ok = run_cli(*gate_args(suite, "reexport", "fp32"), "--no-latency",
                 "--model", "fraud", "--version", "1", *db)  # fmt: skip
    assert ok.returncode == 0 and "last-known-good" in ok.stdout
    reg = run_cli("models", "register", "--model", "fraud", "--version", "2", bad, "--activate",
                  "--auto-rollback", *db)  # fmt: skip
    assert reg.returncode == 0 and "deprecated" not in reg.stderr
    failed = run_cli(*gate_args(suite, "int8_bad", "int8"), "--no-latency",
                     "--model", "fraud", "--version", "2", *db)  # fmt: skip
    assert failed.returncode == 1 and "rolled back fraud from 2 to 1" in failed.stdout
    listed = json.loads(run_cli("models", "list", "--json", *db).stdout)
    assert listed[0]["active"] == "1" and listed[0]["last_known_good"] == "1"
    again = run_cli("rollback", "--model", "fraud", *db)
    assert again.returncode == 0 and "nothing changed" in again.stdout
    # a rollback never moves forward (it used to print "rolled back 1 -> 2"); activate does
    forward = run_cli("rollback", "--model", "fraud", "--to", "2", *db)
    assert forward.returncode == 2 and "use `modelwatch models activate" in forward.stderr
    up = run_cli("models", "activate", "--model", "fraud", "--version", "2", *db)
    assert up.returncode == 0 and "fraud: active 1 -> 2" in up.stdout
    back = run_cli("rollback", "fraud", "--to", "1", *db)
    assert back.returncode == 0 and "rolled back 2 -> 1" in back.stdout
    assert "deprecated: `rollback MODEL`" in back.stderr
    missing = run_cli("rollback", "--model", "ghost", *db)
    assert missing.returncode == 2 and "no model 'ghost'" in missing.stderr
    unknown = run_cli("models", "activate", "--model", "fraud", "--version", "9", *db)
    assert unknown.returncode == 2 and "has no version '9' (known: 1, 2)" in unknown.stderr


def test_config_overrides_the_preset_and_rejects_typos(suite: Suite, tmp_path: Path) -> None:
    cfg = tmp_path / "mw.yaml"
    cfg.write_text(
        "guards:\n"
        "  latency_batch_sizes: [4]\n"
        "  presets:\n"
        "    int8: {max_slice_flip_rate: 0.5, max_slice_metric_drop: 50, max_metric_drop: 5}\n"
    )
    out = run_cli(*gate_args(suite, "int8_bad", "int8"), "--config", str(cfg), "--json",
                  str(tmp_path / "v.json"))  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert set(json.loads((tmp_path / "v.json").read_text())["latency"]["candidate"]) == {"4"}
    cfg.write_text("guards:\n  presets:\n    int8: {max_flip: 0.5}\n")
    bad = run_cli(*gate_args(suite, "int8_bad", "int8"), "--config", str(cfg))
    assert bad.returncode == 2 and "guards.presets.int8.max_flip" in bad.stderr


def test_gate_of_a_registered_version_checks_its_file_first(suite: Suite, tmp_path: Path) -> None:
    """A file swapped after registration is never gated as that version: exit 2, one line
    naming the file and both hashes, nothing recorded."""
    db = ["--database-url", f"sqlite:///{tmp_path / 'mw.db'}"]
    assert run_cli("db", "upgrade", *db).returncode == 0
    artifact = tmp_path / "candidate.onnx"
    shutil.copy(suite.models["reexport"], artifact)
    registered = hashlib.sha256(artifact.read_bytes()).hexdigest()
    reg = run_cli("models", "register", "--model", "fraud", "--version", "2", str(artifact), *db)
    assert reg.returncode == 0, reg.stderr
    shutil.copy(suite.models["int8_bad"], artifact)  # swapped on disk
    args = gate_args(suite, "reexport", "fp32")
    args[args.index("--candidate") + 1] = str(artifact)
    out = run_cli(*args, "--no-latency", "--model", "fraud", "--version", "2", *db)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and str(artifact) in out.stderr
    swapped = hashlib.sha256(artifact.read_bytes()).hexdigest()
    assert registered in out.stderr and swapped in out.stderr
    assert "Gate verdict" not in out.stdout  # nothing was replayed
    engine = make_engine(db[1])
    with transaction(engine) as session:
        assert session.scalar(select(func.count()).select_from(GateRun)) == 0
    engine.dispose()
