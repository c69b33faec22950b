"""The gate on scikit-learn models as users export them: skl2onnx ZipMaps, label + probability
pairs, string labels, int8 builds from onnxruntime.quantization, a LightGBM model via onnxmltools.

Data are scikit-learn's bundled datasets (digits, breast cancer, wine): nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from guards import GateRequest, GuardVerdict, load_golden, preset, run_gate
from tests.conftest import run_cli

pytest.importorskip("skl2onnx")
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
# (label, probabilities) output names: skl2onnx's defaults, and with its ZipMap switched off.
OUTPUTS = {"default": ("output_label", "output_probability"), "plain": ("label", "probabilities")}


@dataclass(frozen=True)
class Family:
    """A reference model, its builds, and a golden set with id, label and a slice column."""

    models: dict[str, Path]
    golden: Path


def _golden(path: Path, x: np.ndarray, y: np.ndarray) -> Path:
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(x.shape[1])])
    frame.insert(0, "id", np.arange(len(frame)))
    frame["label"] = y
    frame["part"] = np.where(np.arange(len(frame)) % 7 == 0, "rare", "common")
    frame.to_parquet(path)
    return path


def _save(model: Any, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def _int8(source: Path, target: Path) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)
    return target


def _family(directory: Path, name: str, loader: Any, **convert: Any) -> Family:
    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPClassifier

    x, y = loader(return_X_y=True)
    x = ((x - x.mean(axis=0)) / (x.std(axis=0) + 1e-9)).astype(np.float32)
    labels = convert.pop("labels", None)
    target = y if labels is None else np.asarray(labels)[y]
    model = MLPClassifier((32,), max_iter=300, random_state=0).fit(x, target)
    ref = _save(to_onnx(model, x[:1], **convert), directory / f"{name}.onnx")
    copy = directory / f"{name}_copy.onnx"
    copy.write_bytes(ref.read_bytes())
    models = {"reference": ref, "copy": copy, "int8": _int8(ref, directory / f"{name}_int8.onnx")}
    return Family(models, _golden(directory / f"{name}.parquet", x, y))


@pytest.fixture(scope="module")
def families(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Family]:
    from sklearn.datasets import load_breast_cancer, load_digits, load_wine

    d = tmp_path_factory.mktemp("sklearn")
    return {
        "digits": _family(d, "digits", load_digits),  # ZipMap seq(map(int64, float))
        "cancer": _family(d, "cancer", load_breast_cancer),  # binary ZipMap
        # label + probability tensors (ZipMap off)
        "cancer_plain": _family(d, "cancer_plain", load_breast_cancer, options={"zipmap": False}),
        # string labels: tensor(string) + seq(map(string, float))
        "wine": _family(d, "wine", load_wine, labels=["barolo", "grignolino", "barbera"]),
    }


def _gate(family: Family, candidate: str, name: str, labels: bool = True) -> GuardVerdict:
    golden = load_golden(
        family.golden,
        id_column="id",
        label_column="label" if labels else None,
        slice_by=["part"],
        features=None if labels else [c for c in pd.read_parquet(family.golden) if c[0] == "f"],
    )
    request = GateRequest(
        family.models["reference"],
        family.models[candidate],
        golden,
        preset(name),
        latency_batch_sizes=(),
    )
    return run_gate(request)


@pytest.mark.parametrize("name", ["digits", "cancer", "cancer_plain", "wine"])
@pytest.mark.parametrize("policy", ["fp32", "fp16", "int8"])
def test_identical_copy_passes_every_preset(
    families: dict[str, Family], name: str, policy: str
) -> None:
    verdict = _gate(families[name], "copy", policy, labels=name != "wine")
    assert verdict.verdict == "pass", [c.describe() for c in verdict.criteria]
    names = {c.name for c in verdict.criteria}
    label, probabilities = OUTPUTS["plain" if name.endswith("plain") else "default"]
    # Both outputs are judged: the probabilities as the task, the label by its flips.
    assert f"flip_rate[{label}]" in names and f"flip_rate[{probabilities}]" in names
    # The label output is class ids: no max_abs/cosine/sqnr statistics or criteria for it.
    assert label not in verdict.outputs and probabilities in verdict.outputs
    assert not any(n.startswith((f"max_abs[{label}", f"allclose[{label}")) for n in names)


def test_zipmap_becomes_class_scores_with_metrics(families: dict[str, Family]) -> None:
    verdict = _gate(families["cancer"], "int8", "int8")
    names = {c.name for c in verdict.criteria}
    assert "metric_drop:roc_auc[output_probability]" in names
    stats = verdict.outputs["output_probability"]
    assert 0.0 < stats.max_abs < 0.5 and stats.cosine > 0.99
    assert verdict.verdict in ("pass", "fail", "inconclusive")


def test_int8_digits_is_judged_not_crashed(families: dict[str, Family]) -> None:
    verdict = _gate(families["digits"], "int8", "int8")
    flips = [c for c in verdict.criteria if c.name == "flip_rate[output_probability]"]
    assert flips and all(0.0 <= c.value <= 1.0 for c in flips)
    assert verdict.outputs["output_probability"].max_abs > 0.0  # quantization changed scores
    label_flip = next(
        c for c in verdict.criteria if c.name == "flip_rate[output_label]" and c.slice is None
    )
    prob_flip = next(
        c for c in verdict.criteria if c.name == "flip_rate[output_probability]" and c.slice is None
    )
    assert label_flip.value == pytest.approx(prob_flip.value)  # label = argmax of probabilities


def _cli(family: Family, candidate: str, *extra: str) -> Any:
    return run_cli(
        "gate",
        "--reference", str(family.models["reference"]),
        "--candidate", str(family.models[candidate]),
        "--golden", str(family.golden),
        "--preset", "fp32",
        "--id-column", "id",
        "--slice-by", "part",
        "--no-latency",
        *extra,
    )  # fmt: skip


def test_cli_zipmap_copy_exits_0_and_output_flag_works(families: dict[str, Family]) -> None:
    out = _cli(families["digits"], "copy", "--label-column", "label")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    chosen = _cli(families["digits"], "copy", "--label-column", "label", "--output", "output_label")
    assert chosen.returncode == 0, chosen.stdout + chosen.stderr


def test_unsupported_output_type_exits_2_naming_it(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])
    seq = helper.make_tensor_sequence_value_info("pieces", TensorProto.FLOAT, None)
    graph = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["x", "x"], ["pieces"])], "g", [x], [seq]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = _save(model, tmp_path / "seq.onnx")
    frame = pd.DataFrame(np.ones((5, 3)), columns=["a", "b", "c"])
    frame.to_csv(tmp_path / "g.csv", index=False)
    out = run_cli(
        "gate", "--reference", str(path), "--candidate", str(path),
        "--golden", str(tmp_path / "g.csv"), "--no-latency",
    )  # fmt: skip
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    line = out.stderr.strip()
    assert len(line.splitlines()) == 1 and "'pieces'" in line and "seq(tensor(float))" in line


def test_extra_text_column_is_named(families: dict[str, Family], tmp_path: Path) -> None:
    frame = pd.read_parquet(families["digits"].golden)
    frame["comment"] = "scanned"
    frame.to_parquet(tmp_path / "g.parquet")
    out = run_cli(
        "gate",
        "--reference", str(families["digits"].models["reference"]),
        "--candidate", str(families["digits"].models["copy"]),
        "--golden", str(tmp_path / "g.parquet"),
        "--id-column", "id", "--label-column", "label", "--slice-by", "part", "--no-latency",
    )  # fmt: skip
    assert out.returncode == 2, out.stdout + out.stderr
    assert "expects 64 feature columns, the golden set has 65" in out.stderr
    assert "comment" in out.stderr


def test_lightgbm_via_onnxmltools(tmp_path: Path) -> None:
    lightgbm = pytest.importorskip("lightgbm")
    onnxmltools = pytest.importorskip("onnxmltools")
    from onnxmltools.convert.common.data_types import FloatTensorType
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    x = x.astype(np.float32)
    # The native training API: NannyML (the estimation oracle) holds lightgbm below 4.6, whose
    # scikit-learn wrapper predates scikit-learn 1.8's check_X_y.
    params = {"objective": "binary", "verbose": -1}
    model = lightgbm.train(params, lightgbm.Dataset(x, y), num_boost_round=30)
    onx = onnxmltools.convert_lightgbm(
        model, initial_types=[("input", FloatTensorType([None, x.shape[1]]))], target_opset=15
    )
    ref = _save(onx, tmp_path / "gbm.onnx")
    copy = tmp_path / "gbm_copy.onnx"
    copy.write_bytes(ref.read_bytes())
    family = Family({"reference": ref, "copy": copy}, _golden(tmp_path / "g.parquet", x, y))
    verdict = _gate(family, "copy", "fp32")
    assert verdict.verdict == "pass", [c.describe() for c in verdict.criteria]
    names = {c.name for c in verdict.criteria}
    # onnxmltools' LightGBM classifier: a label tensor and a ZipMap named "probabilities".
    assert {"flip_rate[label]", "flip_rate[probabilities]"} <= names
    assert "metric_drop:roc_auc[probabilities]" not in names  # fp32 has no metric criterion
    assert verdict.outputs["probabilities"].max_abs == 0.0


def test_multi_output_model_with_bool_and_int_heads(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    # Three heads: a float score, a bool decision and an int64 class; the candidate's decision
    # head is inverted, so it flips on every row while the float head is identical.
    def model(invert: bool) -> Any:
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])
        outs = [
            helper.make_tensor_value_info("score", TensorProto.FLOAT, [None, 2]),
            helper.make_tensor_value_info("decision", TensorProto.BOOL, [None]),
            helper.make_tensor_value_info("cls", TensorProto.INT64, [None]),
        ]
        nodes = [
            helper.make_node("Identity", ["x"], ["score"]),
            helper.make_node("ArgMax", ["x"], ["am"], axis=1, keepdims=0),
            helper.make_node("Identity", ["am"], ["cls"]),
            helper.make_node("Cast", ["am"], ["b"], to=TensorProto.BOOL),
            helper.make_node("Not" if invert else "Identity", ["b"], ["decision"]),
        ]
        graph = helper.make_graph(nodes, "heads", [x], outs)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)

    ref, cand = _save(model(False), tmp_path / "r.onnx"), _save(model(True), tmp_path / "c.onnx")
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (300, 2)).astype(np.float32)
    family = Family(
        {"reference": ref, "copy": cand}, _golden(tmp_path / "g.parquet", x, x[:, 1] > x[:, 0])
    )
    verdict = _gate(family, "copy", "fp16", labels=False)
    by = {c.name: c for c in verdict.criteria if c.slice is None}
    assert by["flip_rate[decision]"].status == "fail" and by["flip_rate[decision]"].value == 1.0
    assert by["flip_rate[score]"].status == "pass" and by["flip_rate[cls]"].status == "pass"
    assert set(verdict.outputs) == {"score"}  # class heads get no distance statistics
    assert verdict.verdict == "fail"
