"""Layer localisation on models whose culprit is known: the report must name it first."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
from onnx import TensorProto, helper, numpy_helper

import guards.localize
from guards import GateRequest, GuardVerdict, load_golden, preset, run_gate
from guards._runtime import session_options
from guards.localize import Localization, LocalizeJob, localize
from guards.localize._run import sample_rows
from monitor.app.demo._models import FEATURES, OPSET, save, to_float16
from tests.conftest import run_cli
from tests.guards.conftest import Suite
from tests.guards.test_cli import gate_args


def fraud_gate(suite: Suite, candidate: Path, name: str, **kw: object) -> GuardVerdict:
    golden = load_golden(
        suite.golden, id_column="id", label_column="label", slice_by=["segment", "region"]
    )
    request = GateRequest(
        suite.models["reference"], candidate, golden, preset(name), latency_batch_sizes=(), **kw
    )
    return run_gate(request)


def located(verdict: GuardVerdict) -> Localization:
    assert verdict.localization is not None
    assert verdict.localization.error is None, verdict.localization.error
    return verdict.localization


def test_int8_calibrated_without_the_rare_segment_names_the_clipped_activation(
    suite: Suite,
) -> None:
    verdict = fraud_gate(suite, suite.models["int8_bad"], "int8", localize="on_fail")
    assert verdict.verdict == "fail"
    loc = located(verdict)
    # The calibration rows never reach the `high` segment's magnitudes: the input activation's
    # QDQ range clips them before the first MatMul, and every later error descends from that.
    assert loc.first_divergent == "features" and loc.largest_growth == "features"
    assert loc.slice == {"segment": "high"}
    first = loc.tensors[0]
    assert first.name == "features" and first.op_type == "input"
    assert first.slice_max_abs == first.max_abs > 1.0
    assert [t.name for t in loc.tensors][-1] == "probabilities"
    ranges = {r.name: r for r in loc.ranges}
    clipped = ranges["features"]
    assert clipped.reached_max > clipped.calibrated_max and clipped.clipped > 0.1
    options = [r.option for r in loc.remedies]
    assert "calibration_data_reader" in options[0] and "segment=high" in loc.remedies[0].text
    # Every later activation clips too: excluding nodes around one tensor would not help.
    assert len(options) == 1


def test_a_passing_gate_localises_only_when_asked(suite: Suite) -> None:
    auto = fraud_gate(suite, suite.models["fp16"], "fp16", localize="on_fail")
    assert auto.verdict == "pass" and auto.localization is None
    assert "localization" not in auto.to_dict()
    asked = located(fraud_gate(suite, suite.models["fp16"], "fp16", localize="always"))
    # fp16 rounding stays under the preset's tolerance everywhere; Casts are not compared.
    assert asked.first_divergent is None and asked.largest_growth is None
    assert asked.slice is None and all(t.slice_max_abs is None for t in asked.tensors)
    assert not any("cast" in t.name.lower() for t in asked.tensors)
    assert 0 < max(t.rel_err for t in asked.tensors) < 1e-2 and asked.remedies == ()


def test_identical_models_report_zero_error_and_no_culprit(suite: Suite) -> None:
    loc = located(fraud_gate(suite, suite.models["reexport"], "fp32", localize="always"))
    assert loc.first_divergent is None and loc.rows == 2048
    assert all(t.max_abs == 0.0 and t.cosine == pytest.approx(1.0) for t in loc.tensors)
    doc = json.loads(json.dumps(loc.to_dict(), allow_nan=False))
    assert doc["tensors"][0]["sqnr_db"] is None  # infinite SQNR is written as null


def perturb(source: Path, target: Path, initializer: str, delta: float) -> Path:
    model = onnx.load(str(source))
    for i, init in enumerate(model.graph.initializer):
        if init.name == initializer:
            array = numpy_helper.to_array(init).copy()
            array.flat[0] += np.float32(delta)
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(array, initializer))
    return save(model, target)


def test_one_perturbed_weight_names_the_node_that_consumes_it(suite: Suite) -> None:
    candidate = perturb(suite.models["reference"], suite.directory / "w1.onnx", "W1", 3.0)
    verdict = fraud_gate(suite, candidate, "fp32", localize="on_fail")
    assert verdict.verdict == "fail"
    loc = located(verdict)
    assert loc.first_divergent == "mm1" and loc.largest_growth == "mm1"
    by_name = {t.name: t for t in loc.tensors}
    assert by_name["mm1"].op_type == "MatMul"
    assert by_name["h0"].max_abs == 0.0 and by_name["mm1"].max_abs > 0.1
    assert loc.remedies == ()  # no quantization or fp16 option fixes a changed weight


def overflow_model() -> onnx.ModelProto:
    """x [N, 4] -> `expand` (x @ 1000s: beyond 65504 on hot rows) -> `shrink` (@ 1e-4) -> y."""
    big = numpy_helper.from_array(np.full((4, 4), 1000.0, np.float32), "W_big")
    small = numpy_helper.from_array(np.full((4, 1), 1e-4, np.float32), "W_small")
    nodes = [
        helper.make_node("MatMul", ["x", "W_big"], ["wide"], name="expand"),
        helper.make_node("Relu", ["wide"], ["wide_relu"], name="clip"),
        helper.make_node("MatMul", ["wide_relu", "W_small"], ["y"], name="shrink"),
    ]
    graph = helper.make_graph(
        nodes,
        "overflow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])],
        [big, small],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def test_fp16_overflow_names_the_overflowing_node_and_the_fp16_option(tmp_path: Path) -> None:
    ref = save(overflow_model(), tmp_path / "overflow.onnx")
    cand = to_float16(ref, tmp_path / "overflow_fp16.onnx")
    rng = np.random.default_rng(4)
    hot = rng.random(600) < 0.1
    x = np.abs(rng.normal(1.0, 0.3, size=(600, 4))) * np.where(hot, 40.0, 1.0)[:, None]
    frame = pd.DataFrame(x, columns=list("abcd"))
    frame["segment"] = np.where(hot, "hot", "normal")
    frame.to_csv(tmp_path / "g.csv", index=False)
    golden = load_golden(tmp_path / "g.csv", slice_by=["segment"])
    request = GateRequest(
        ref, cand, golden, preset("fp16"), latency_batch_sizes=(), localize="on_fail"
    )
    verdict = run_gate(request)
    assert verdict.verdict == "fail"
    loc = located(verdict)
    assert loc.first_divergent == "wide" and loc.largest_growth == "wide"
    wide = loc.tensors[0]
    assert wide.nan_or_inf > 0 and wide.to_dict()["max_abs"] is None  # inf -> null
    assert loc.remedies[0].option.endswith("(node_block_list=['expand'], keep_io_types=True)")


def sklearn_pipeline(path: Path) -> tuple[Path, np.ndarray]:
    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(7)
    x = rng.normal(5.0, 2.0, size=(400, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 10).astype(np.int64)
    pipe = make_pipeline(
        StandardScaler(), MLPClassifier((8,), solver="lbfgs", max_iter=500, random_state=0)
    )
    pipe.fit(x, y)
    # skl2onnx's default ZipMap output is a sequence of maps: it must not stop localisation.
    return save(to_onnx(pipe, x[:1], target_opset=OPSET), path), x


def test_sklearn_pipeline_with_a_changed_scaler_names_the_scaler(tmp_path: Path) -> None:
    pytest.importorskip("skl2onnx")
    ref, x = sklearn_pipeline(tmp_path / "sk.onnx")
    model = onnx.load(str(ref))
    scaler = next(n for n in model.graph.node if n.op_type == "Scaler")
    scale = next(a for a in scaler.attribute if a.name == "scale")
    scale.floats[2] *= 1.5  # the third feature is scaled wrongly from here on
    cand = save(model, tmp_path / "sk_bad.onnx")
    job = LocalizeJob(
        ref, cand, {"X": x}, ["CPUExecutionProvider"], session_options(), tolerance=1e-4
    )
    loc = localize(job)
    assert loc.first_divergent == scaler.output[0] and loc.largest_growth == scaler.output[0]
    assert loc.tensors[0].op_type == "Scaler" and loc.rows == 400
    assert any(n.op_type == "ZipMap" for n in model.graph.node)
    names = {t.name for t in loc.tensors}
    assert "output_label" not in names and "output_probability" not in names  # int64, maps


def test_budget_stops_after_one_batch_and_says_so(suite: Suite) -> None:
    loc = located(
        fraud_gate(
            suite, suite.models["int8_bad"], "int8", localize="always", localize_budget_s=1e-9
        )
    )
    assert loc.rows == 1024 and loc.truncated
    assert loc.first_divergent == "features"  # the failing slice's rows come first


def test_sample_puts_the_failing_slice_first_and_is_bounded() -> None:
    rows, n_slice = sample_rows(10, np.array([7, 3]), max_rows=4)
    assert list(rows[:2]) == [7, 3] and n_slice == 2 and len(set(rows)) == 4
    rows, n_slice = sample_rows(10, np.arange(10), max_rows=3)
    assert n_slice == 3 and len(rows) == 3
    rows, n_slice = sample_rows(1, None, max_rows=2048)
    assert list(rows) == [0] and n_slice == 0


def test_one_row_golden_set(suite: Suite, tmp_path: Path) -> None:
    one = tmp_path / "one.csv"
    pd.read_parquet(suite.golden).head(1).to_csv(one, index=False)
    golden = load_golden(one, id_column="id", label_column="label", features=list(FEATURES))
    request = GateRequest(
        suite.models["reference"], suite.models["int8_bad"], golden, preset("int8"),
        latency_batch_sizes=(), localize="always",
    )  # fmt: skip
    loc = located(run_gate(request))
    assert loc.rows == 1 and len(loc.tensors) == 8


def test_cli_localize_writes_json_and_markdown(suite: Suite, tmp_path: Path) -> None:
    js, md, html = tmp_path / "v.json", tmp_path / "v.md", tmp_path / "v.html"
    out = run_cli(
        *gate_args(suite, "int8_bad", "int8"), "--no-latency", "--localize",
        "--localize-budget", "20s", "--json", str(js), "--markdown", str(md), "--html", str(html),
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    assert "First divergent tensor: features (input)" in out.stdout
    loc = json.loads(js.read_text())["localization"]
    assert loc["first_divergent"] == "features" and loc["largest_growth"] == "features"
    assert loc["rows"] == 2048 and isinstance(loc["seconds"], float)
    assert {"name", "op_type", "max_abs", "rel_err", "sqnr_db", "cosine", "slice_max_abs"} <= set(
        loc["tensors"][0]
    )
    text = md.read_text()
    assert "### Localization" in text and "| features | input |" in text
    assert "calibration_data_reader" in text and "#### Calibrated ranges vs reached" in text
    page = html.read_text()
    assert "<h2>Localization</h2>" in page and "<td>features</td><td>input</td>" in page


def test_cli_no_localize_and_bad_budget(suite: Suite, tmp_path: Path) -> None:
    js = tmp_path / "v.json"
    out = run_cli(*gate_args(suite, "int8_bad", "int8"), "--no-latency", "--no-localize",
                  "--json", str(js))  # fmt: skip
    assert out.returncode == 1 and "localization" not in json.loads(js.read_text())
    assert "First divergent" not in out.stdout
    bad = run_cli(*gate_args(suite, "int8_bad", "int8"), "--localize-budget", "soon")
    assert bad.returncode == 2 and "--localize-budget" in bad.stderr
    assert "Traceback" not in bad.stderr
    zero = run_cli(*gate_args(suite, "int8_bad", "int8"), "--localize-rows", "0")
    assert zero.returncode == 2 and "--localize-rows" in zero.stderr
    few = run_cli(*gate_args(suite, "int8_bad", "int8"), "--no-latency", "--localize-rows", "300",
                  "--json", str(js))  # fmt: skip
    assert json.loads(js.read_text())["localization"]["rows"] == 300, few.stderr


def test_public_surface() -> None:
    assert set(guards.localize.__all__) == {
        "ActivationRange", "Localization", "LocalizeJob", "Remedy", "TensorError", "localize"
    }  # fmt: skip


def test_config_turns_automatic_localisation_off_and_validates_budget(
    suite: Suite, tmp_path: Path
) -> None:
    from pydantic import ValidationError

    from monitor.config import GuardsConfig

    config = tmp_path / "c.yaml"
    config.write_text("guards:\n  localize:\n    on_fail: false\n")
    out = run_cli(*gate_args(suite, "int8_bad", "int8"), "--no-latency", "--config", str(config))
    assert out.returncode == 1 and "First divergent" not in out.stdout, out.stderr
    with pytest.raises(ValidationError, match="budget"):
        GuardsConfig.model_validate({"localize": {"budget": "0s"}})
    with pytest.raises(ValidationError, match="rows"):
        GuardsConfig.model_validate({"localize": {"rows": 10}})  # unknown key: max_rows


def test_reports_show_a_localisation_that_could_not_run(suite: Suite) -> None:
    from guards.reports import render_html, render_markdown

    verdict = fraud_gate(suite, suite.models["reexport"], "fp32")
    doc = verdict.to_dict()
    doc["localization"] = Localization.failed("m.onnx: cannot expose tensors", 0.1, 1e-4).to_dict()
    for text in (render_markdown(doc), render_html(doc)):
        assert "Localization failed: m.onnx: cannot expose tensors" in text


def hidden_spike_model(bias0: float = 0.0) -> onnx.ModelProto:
    """features [N, 8] -> mm0 = x @ W0 (unit 0 = 8 * f0) -> h0 = Relu(mm0 + B0) -> y = h0 @ W1.

    A negative `bias0` switches hidden unit 0 off after the bias, so only mm0 carries the spike.
    """
    rng = np.random.default_rng(12)
    w0 = rng.normal(0, 0.3, size=(8, 16)).astype(np.float32)
    w0[:, 0], w0[0, 0] = 0.0, 8.0  # hidden unit 0 follows f0 alone, amplified
    inits = [
        numpy_helper.from_array(w0, "W0"),
        numpy_helper.from_array(np.array([bias0] + [0.0] * 15, np.float32), "B0"),
        numpy_helper.from_array(rng.normal(0, 0.3, size=(16, 2)).astype(np.float32), "W1"),
    ]
    nodes = [
        helper.make_node("MatMul", ["features", "W0"], ["mm0"], name="dense0"),
        helper.make_node("Add", ["mm0", "B0"], ["z0"], name="bias0"),
        helper.make_node("Relu", ["z0"], ["h0"], name="relu0"),
        helper.make_node("MatMul", ["h0", "W1"], ["y"], name="dense1"),
    ]
    graph = helper.make_graph(
        nodes,
        "spike",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def spike_localization(tmp_path: Path, bias0: float) -> Localization:
    from monitor.app.demo._models import to_int8_static

    # Calibration: f0 stays near 0 while the other features span the input's range, so the input
    # is never clipped; the rare `spike` rows put f0 at 3, which only the hidden MatMul amplifies
    # beyond its calibrated range.
    rng = np.random.default_rng(2)
    calib = rng.normal(0, 1, size=(1000, 8)).astype(np.float32)
    calib[:, 0] *= 0.05
    ref = save(hidden_spike_model(bias0), tmp_path / "spike.onnx")
    cand = to_int8_static(ref, tmp_path / "spike_int8.onnx", calib)
    x = rng.normal(0, 1, size=(600, 8)).astype(np.float32)
    x[:, 0] *= 0.05
    x[:, 1:] *= 0.5  # well inside the calibrated ranges: only the spike can clip
    spike = np.arange(600) % 10 == 0
    x[spike, 0] = 3.0
    job = LocalizeJob(
        ref, cand, {"features": x}, ["CPUExecutionProvider"], session_options(), tolerance=0.1,
        slice_key={"segment": "spike"}, slice_rows=np.flatnonzero(spike),
    )  # fmt: skip
    return localize(job)


def test_int8_hidden_activation_calibrated_without_the_rare_segment(tmp_path: Path) -> None:
    loc = spike_localization(tmp_path, bias0=0.0)
    ranges = {r.name: r for r in loc.ranges}
    assert ranges["features"].clipped == 0.0  # the input is not the problem
    assert ranges["mm0"].reached_max > ranges["mm0"].calibrated_max
    assert loc.first_divergent == "mm0" and loc.largest_growth == "mm0"
    assert loc.remedies[0].tensor == "mm0" and "calibration_data_reader" in loc.remedies[0].option
    assert len(loc.remedies) == 1  # h0 clips as well: only recalibration fixes both


def test_clipping_confined_to_one_tensor_also_suggests_excluding_its_nodes(
    tmp_path: Path,
) -> None:
    loc = spike_localization(tmp_path, bias0=-30.0)
    assert loc.first_divergent == "mm0" and [r.name for r in loc.ranges if r.clipped] == ["mm0"]
    assert loc.remedies[0].tensor == "mm0" and len(loc.remedies) == 2
    assert loc.remedies[1].option.endswith("(nodes_to_exclude=['dense0', 'bias0'])")


def test_dynamic_int8_culprit_gets_quantize_dynamic_exclusion(suite: Suite) -> None:
    from monitor.app.demo._models import to_int8_dynamic

    cand = to_int8_dynamic(suite.regressor, suite.directory / "reg_dyn.onnx")
    rng = np.random.default_rng(0)
    feeds = {k: rng.normal(size=(300, 1)).astype(np.float32) for k in ("age", "amount", "tenure")}
    opts = session_options()
    loc = localize(LocalizeJob(suite.regressor, cand, feeds, ["CPUExecutionProvider"], opts, 5e-3))
    # Several inputs, each [N, 1], concatenated: the first MatMul on int8 weights diverges.
    assert [t.name for t in loc.tensors][:2] == ["x", "m0"] and loc.tensors[0].max_abs == 0.0
    assert loc.first_divergent == "m0" and loc.remedies
    assert loc.remedies[0].option.startswith("onnxruntime.quantization.quantize_dynamic(")
    assert "nodes_to_exclude" in loc.remedies[0].option
