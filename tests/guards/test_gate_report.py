"""The gate report says what was gated, with units, both models' values and every batch size."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from guards import GateRequest, preset, run_gate
from guards.reports import render_html, render_markdown
from tests.conftest import run_cli
from tests.guards.conftest import Suite
from tests.guards.test_gate import fraud_golden


@pytest.fixture(scope="module")
def bad_doc(suite: Suite) -> dict[str, Any]:
    request = GateRequest(
        suite.models["reference"], suite.models["int8_bad"], fraud_golden(suite), preset("int8"),
        latency_batch_sizes=(1, 16), model="fraud", version="2",
    )  # fmt: skip
    return run_gate(request).to_dict()


def test_report_names_model_artifacts_hashes_and_time(
    suite: Suite, bad_doc: dict[str, Any]
) -> None:
    digest = hashlib.sha256(suite.models["int8_bad"].read_bytes()).hexdigest()
    for text in (render_html(bad_doc), render_markdown(bad_doc)):
        assert "fraud v2" in text and "Model: fraud, version 2" in text
        assert f"{suite.models['int8_bad'].name} (sha256 {digest})" in text
        assert f"golden: {suite.golden.name} (sha256 " in text and "8000 rows" in text
        assert re.search(r"run at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", text)
        assert "Providers: reference CPUExecutionProvider" in text


def test_metric_drop_has_units_and_both_values(bad_doc: dict[str, Any]) -> None:
    drop = next(c for c in bad_doc["criteria"] if c["name"].startswith("metric_drop:accuracy")
                and c["slice"] is None)  # fmt: skip
    assert drop["unit"] == "points" and bad_doc["verdict"] == "fail"
    assert drop["value"] == pytest.approx((drop["reference"] - drop["candidate"]) * 100)
    text = render_markdown(bad_doc)
    assert f"{drop['value']:.4g} points" in text
    # the decisive (failing, furthest past its threshold) criterion is named before any table
    assert text.index("Decided by ") < text.index("### Criteria")
    first_row = text.split("### Criteria")[1].splitlines()[4]
    assert first_row.startswith("| FAIL |")


def test_every_batch_size_and_slow_candidate_called_out(bad_doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(bad_doc)
    ref = doc["latency"]["reference"]["16"]
    doc["latency"]["candidate"]["16"] = {**ref, "p50_ms": ref["p50_ms"] * 3.4}
    text = render_html(doc)
    assert "candidate p50 is 3.4x the reference at batch 16" in text
    for batch in ("1", "16"):
        assert f"<td>{batch}</td>" in text
    assert "p50 ratio" in text and "reference p95 ms" in text
    same = copy.deepcopy(bad_doc)
    same["latency"]["candidate"] = copy.deepcopy(same["latency"]["reference"])
    assert "the reference at batch" not in render_html(same)


def test_cli_report_carries_model_and_version(suite: Suite, tmp_path: Path) -> None:
    out = run_cli(
        "gate", "--reference", str(suite.models["reference"]), "--candidate",
        str(suite.models["int8_bad"]), "--golden", str(suite.golden), "--preset", "int8",
        "--label-column", "label", "--id-column", "id", "--slice-by", "segment",
        "--slice-by", "region", "--no-latency",
        "--html", str(tmp_path / "g.html"), "--model", "fraud", "--version", "7",
        "--database-url", f"sqlite:///{tmp_path / 'db.sqlite'}",
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    text = (tmp_path / "g.html").read_text()
    assert "Model: fraud, version 7" in text and "Decided by flip_rate" in text


def test_json_dash_writes_the_verdict_to_stdout(suite: Suite, tmp_path: Path) -> None:
    out = run_cli(
        "gate", "--reference", str(suite.models["reference"]), "--candidate",
        str(suite.models["reexport"]), "--golden", str(suite.golden), "--features",
        "f0,f1,f2,f3,f4,f5,f6,f7", "--no-latency", "--json", "-", cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["verdict"] == "pass" and not (tmp_path / "-").exists()
    assert out.stderr.startswith("Gate verdict: PASS")
