"""The gate on real models: re-export, fp16, good and bad int8 builds, multi-input, mismatches."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from guards import GateRequest, GuardVerdict, load_golden, preset, run_gate
from guards.golden import GoldenSet
from monitor.app.demo._models import FEATURES
from monitor.errors import InputError, SchemaMismatchError
from tests.guards.conftest import Suite


def fraud_golden(suite: Suite, **kw: object) -> GoldenSet:
    return load_golden(
        suite.golden, id_column="id", label_column="label", slice_by=["segment", "region"], **kw
    )


def gate(
    suite: Suite, candidate: str, name: str, golden: GoldenSet | None = None, **overrides: float
) -> GuardVerdict:
    request = GateRequest(
        suite.models["reference"],
        suite.models[candidate],
        golden or fraud_golden(suite),
        preset(name).with_overrides(overrides),
        latency_batch_sizes=(),
    )
    return run_gate(request)


def find(verdict: GuardVerdict, prefix: str, sl: dict[str, str] | None = None) -> str:
    matches = [c for c in verdict.criteria if c.name.startswith(prefix) and c.slice == sl]
    assert len(matches) == 1, [c.describe() for c in verdict.criteria]
    return matches[0].status


def test_identical_reexport_passes_fp32(suite: Suite) -> None:
    verdict = gate(suite, "reexport", "fp32")
    assert verdict.verdict == "pass" and verdict.exit_code == 0
    stats = verdict.outputs["probabilities"]
    assert stats.max_abs == 0.0 and stats.cosine == pytest.approx(1.0)
    assert verdict.to_dict()["outputs"]["probabilities"]["sqnr_db"] is None  # infinite
    assert verdict.providers["candidate"] == ("CPUExecutionProvider",)


def test_float16_build_passes_fp16_but_not_fp32(suite: Suite) -> None:
    fp16 = gate(suite, "fp16", "fp16")
    assert fp16.verdict == "pass", [c.describe() for c in fp16.failing]
    assert 0.0 < fp16.outputs["probabilities"].max_abs <= 1e-2
    strict = gate(suite, "fp16", "fp32")
    assert strict.verdict == "fail"
    assert find(strict, "allclose[probabilities]") == "fail"


def test_bad_int8_fails_on_the_rare_segment_while_overall_flip_rate_passes(suite: Suite) -> None:
    verdict = gate(suite, "int8_bad", "int8")
    assert verdict.verdict == "fail" and verdict.exit_code == 1
    assert find(verdict, "flip_rate", None) == "pass"
    assert find(verdict, "flip_rate", {"segment": "high"}) == "fail"
    assert find(verdict, "flip_rate", {"segment": "normal"}) == "pass"
    failing = {c.name: c for c in verdict.failing if c.slice == {"segment": "high"}}
    flip = failing["flip_rate[probabilities]"]
    assert flip.value > flip.threshold == 0.03
    assert verdict.worst_rows[0].slice["segment"] == "high"


def test_good_int8_build_passes_int8(suite: Suite) -> None:
    verdict = gate(suite, "int8_good", "int8")
    assert verdict.verdict == "pass", [c.describe() for c in verdict.failing]
    names = {c.name for c in verdict.criteria}
    assert {"metric_drop:accuracy[probabilities]", "metric_drop:roc_auc[probabilities]"} <= names


def test_small_slices_are_inconclusive_unless_the_breach_is_certain(
    suite: Suite, tmp_path: Path
) -> None:
    frame = pd.read_parquet(suite.golden)
    high = frame[frame.segment == "high"].head(120)
    small = pd.concat([frame[frame.segment == "normal"].head(400), high])
    small["bucket"] = np.where(np.arange(len(small)) % 2 == 0, "x", "y")
    path = tmp_path / "small.parquet"
    small.to_parquet(path)
    golden = load_golden(
        path, id_column="id", label_column="label", slice_by=["segment", "bucket"],
        features=list(FEATURES),
    )  # fmt: skip
    verdict = gate(suite, "int8_bad", "int8", golden)
    # 120 high rows with a flip rate far above 3%: the Wilson lower bound alone shows the breach.
    assert find(verdict, "flip_rate", {"segment": "high"}) == "fail"
    assert find(verdict, "metric_drop:roc_auc", {"segment": "high"}) == "inconclusive"
    # 400 ordinary rows are a noisier sample than 8000: relax the overall threshold to see the
    # small slice decide the verdict.
    good = gate(suite, "int8_good", "int8", golden, max_flip_rate=0.05)
    assert find(good, "flip_rate", {"segment": "high"}) == "inconclusive"
    assert good.verdict == "inconclusive" and good.exit_code == 3


def test_json_document_has_exactly_the_documented_shape(suite: Suite) -> None:
    request = GateRequest(
        suite.models["reference"],
        suite.models["int8_bad"],
        fraud_golden(suite),
        preset("int8"),
        latency_batch_sizes=(1, 16),
    )
    doc = json.loads(json.dumps(run_gate(request).to_dict(), allow_nan=False))
    assert set(doc) == {
        "verdict", "run", "preset", "rows", "providers", "criteria", "outputs", "latency",
        "worst_rows",
    }  # fmt: skip
    assert set(doc["run"]) == {"model", "version", "time", "artifacts"}
    assert set(doc["run"]["artifacts"]) == {"reference", "candidate", "golden"}
    assert doc["rows"] == 8000 and doc["preset"] == "int8"
    keys = {"name", "slice", "value", "threshold", "status", "unit", "reference", "candidate"}
    assert all(set(c) == keys for c in doc["criteria"])
    assert set(doc["outputs"]["probabilities"]) == {
        "max_abs", "mean_abs", "p99_abs", "max_rel", "cosine", "sqnr_db", "min_passing_atol",
        "nan_or_inf",
    }  # fmt: skip
    assert set(doc["latency"]["candidate"]) == {"1", "16"}
    assert doc["latency"]["reference"]["16"]["rows_per_s"] > 0
    assert {"id", "slice", "max_abs", "flip"} == set(doc["worst_rows"][0])
    assert isinstance(doc["worst_rows"][0]["id"], int)


def test_multi_input_model_is_fed_by_named_columns(suite: Suite, tmp_path: Path) -> None:
    from monitor.app.demo._models import to_float16

    golden = load_golden(
        suite.regressor_golden, id_column="id", label_column="target", slice_by=["segment"]
    )
    fp16 = to_float16(suite.regressor, tmp_path / "regressor_fp16.onnx")
    policy = preset("int8").with_overrides({"max_metric_drop": 0.5})
    verdict = run_gate(GateRequest(suite.regressor, fp16, golden, policy, latency_batch_sizes=()))
    assert verdict.verdict == "pass"
    names = {c.name for c in verdict.criteria}
    assert names == {"metric_drop:mae[prediction]", "metric_drop:rmse[prediction]"}
    assert verdict.worst_rows[0].id.startswith("r")


def test_missing_input_column_is_an_error_naming_it(suite: Suite, tmp_path: Path) -> None:
    frame = pd.read_csv(suite.regressor_golden).drop(columns=["tenure"])
    path = tmp_path / "no_tenure.csv"
    frame.to_csv(path, index=False)
    golden = load_golden(path, id_column="id", label_column="target")
    request = GateRequest(suite.regressor, suite.regressor, golden, preset("fp32"))
    with pytest.raises(SchemaMismatchError, match="tenure"):
        run_gate(request)


def test_models_with_different_inputs_cannot_be_compared(suite: Suite) -> None:
    golden = load_golden(suite.regressor_golden, id_column="id", label_column="target")
    request = GateRequest(suite.regressor, suite.models["reference"], golden, preset("fp32"))
    with pytest.raises(SchemaMismatchError, match="different inputs"):
        run_gate(request)


def test_feature_count_mismatch_names_the_input(suite: Suite) -> None:
    golden = load_golden(suite.golden, features=list(FEATURES[:5]))
    with pytest.raises(SchemaMismatchError, match="expects 8 feature columns"):
        gate(suite, "reexport", "fp32", golden)


def test_unknown_golden_column_is_an_input_error(suite: Suite) -> None:
    with pytest.raises(InputError, match="column\\(s\\) not found: regoin"):
        load_golden(suite.golden, slice_by=["regoin"])


def test_identical_models_list_no_worst_rows(suite: Suite) -> None:
    assert gate(suite, "reexport", "fp32").worst_rows == ()


def test_latency_criteria_use_the_largest_batch(suite: Suite) -> None:
    policy = preset("fp32").with_overrides({"latency_budget_ms": 1e-6, "max_latency_ratio": 1e6})
    request = GateRequest(
        suite.models["reference"], suite.models["reexport"], fraud_golden(suite), policy,
        latency_batch_sizes=(1, 32),
    )  # fmt: skip
    verdict = run_gate(request)
    budget = [c for c in verdict.criteria if c.name == "latency_p95_ms[batch=32]"]
    ratio = [c for c in verdict.criteria if c.name == "latency_ratio_p95[batch=32]"]
    assert budget[0].status == "fail" and budget[0].value > budget[0].threshold
    assert ratio[0].status == "pass"
    assert verdict.verdict == "fail"
    assert [s.batch_size for s in verdict.latency["candidate"]] == [1, 32]


def test_models_with_different_outputs_cannot_be_compared(suite: Suite, tmp_path: Path) -> None:
    import onnx

    model = onnx.load(str(suite.models["reference"]))
    model.graph.output[0].name = "scores"
    model.graph.node[-1].output[0] = "scores"
    renamed = tmp_path / "renamed.onnx"
    onnx.save_model(model, str(renamed))
    request = GateRequest(suite.models["reference"], renamed, fraud_golden(suite), preset("fp32"))
    with pytest.raises(SchemaMismatchError, match="different outputs"):
        run_gate(request)


def test_text_column_feeding_a_float_input_is_named(suite: Suite) -> None:
    golden = load_golden(suite.golden, features=[*FEATURES[:7], "region"])
    with pytest.raises(SchemaMismatchError, match="region"):
        gate(suite, "reexport", "fp32", golden)


def test_labels_outside_the_classes_are_rejected(suite: Suite, tmp_path: Path) -> None:
    frame = pd.read_parquet(suite.golden)
    frame["label"] = frame["label"] + 5
    path = tmp_path / "bad_labels.parquet"
    frame.to_parquet(path)
    golden = load_golden(path, id_column="id", label_column="label", slice_by=["region", "segment"])
    with pytest.raises(InputError, match="class indices 0..1"):
        gate(suite, "reexport", "int8", golden)


def test_dynamic_int8_differs_elementwise_but_keeps_decisions(suite: Suite) -> None:
    verdict = gate(suite, "int8_dynamic", "fp32")
    assert find(verdict, "allclose[probabilities]") == "fail"
    stats = verdict.outputs["probabilities"]
    assert stats.min_passing_atol > 1e-5 and 0.99 < stats.cosine <= 1.0
