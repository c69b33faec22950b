"""Reproducible ONNX models and golden sets for the demo, tests and benchmarks (not the gate).

A fraud-like binary classifier (MLP, one 2-D float input, softmax probabilities), its optimized
builds made with onnxruntime's own tools (float16 conversion, dynamic and static QDQ int8
quantization), a multi-input regression model, and golden sets with a rare high-magnitude
segment. Everything is seeded, so the same call gives the same bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import TensorProto, checker, helper, numpy_helper

if TYPE_CHECKING:
    import pandas as pd

FEATURES = tuple(f"f{i}" for i in range(8))
OPSET = 17
HIGH_SCALE = 6.0
POSITIVE_RATE = 0.04
SHARPNESS = 3.0


def _weights(seed: int, sizes: tuple[int, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        w = rng.normal(0.0, 1.0 / np.sqrt(fan_in), size=(fan_in, fan_out)).astype(np.float32)
        b = rng.normal(0.0, 0.1, size=fan_out).astype(np.float32)
        layers.append((w, b))
    return layers


def fraud_classifier(
    seed: int = 8, n_features: int = len(FEATURES), hidden: int = 32, depth: int = 2
) -> Any:
    """A binary MLP classifier: input `features` [N, F] -> output `probabilities` [N, 2]."""
    layers = _weights(seed, (n_features, *([hidden] * depth), 2))
    _make_positives_rare(layers, n_features)
    nodes, inits, prev = [], [], "features"
    for i, (w, b) in enumerate(layers):
        inits += [numpy_helper.from_array(w, f"W{i}"), numpy_helper.from_array(b, f"B{i}")]
        nodes += [
            helper.make_node("MatMul", [prev, f"W{i}"], [f"mm{i}"]),
            helper.make_node("Add", [f"mm{i}", f"B{i}"], [f"z{i}"]),
        ]
        prev = f"z{i}"
        if i < len(layers) - 1:
            nodes.append(helper.make_node("Relu", [prev], [f"h{i}"]))
            prev = f"h{i}"
    nodes.append(helper.make_node("Softmax", [prev], ["probabilities"], axis=-1))
    graph = helper.make_graph(
        nodes,
        "fraud_mlp",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", n_features])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 2])],
        inits,
    )
    return _finish(graph)


def multi_input_regressor(seed: int = 11) -> Any:
    """Inputs `age`, `amount`, `tenure` [N, 1] each -> output `prediction` [N, 1]."""
    (w0, b0), (w1, b1) = _weights(seed, (3, 16, 1))
    names = ["age", "amount", "tenure"]
    nodes = [
        helper.make_node("Concat", names, ["x"], axis=1),
        helper.make_node("MatMul", ["x", "W0"], ["m0"]),
        helper.make_node("Add", ["m0", "B0"], ["z0"]),
        helper.make_node("Relu", ["z0"], ["h0"]),
        helper.make_node("MatMul", ["h0", "W1"], ["m1"]),
        helper.make_node("Add", ["m1", "B1"], ["prediction"]),
    ]
    inits = [numpy_helper.from_array(a, n) for a, n in ((w0, "W0"), (b0, "B0"), (w1, "W1"))]
    inits.append(numpy_helper.from_array(b1, "B1"))
    graph = helper.make_graph(
        nodes,
        "multi_input_regressor",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 1]) for n in names],
        [helper.make_tensor_value_info("prediction", TensorProto.FLOAT, ["N", 1])],
        inits,
    )
    return _finish(graph)


def _make_positives_rare(layers: list[tuple[np.ndarray, np.ndarray]], n_features: int) -> None:
    """Shift the positive logit so about 4% of ordinary rows are predicted positive, like fraud."""
    h = np.random.default_rng(0).normal(size=(4000, n_features)).astype(np.float32)
    for i, (w, b) in enumerate(layers):
        h = h @ w + b
        if i < len(layers) - 1:
            h = np.maximum(h, 0.0)
    layers[-1][1][1] -= np.float32(np.quantile(h[:, 1] - h[:, 0], 1.0 - POSITIVE_RATE))
    # Sharper probabilities: confident on most rows, uncertain near the decision boundary.
    for arr in layers[-1]:
        arr *= np.float32(SHARPNESS)


def _finish(graph: Any) -> Any:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    checker.check_model(model)
    return model


def save(model: Any, path: Path) -> Path:
    """Write an ONNX model and return its path."""
    onnx.save_model(model, str(path))
    return path


def to_float16(source: Path, target: Path) -> Path:
    """A float16 build of `source`, float32 inputs and outputs kept (onnxruntime's converter)."""
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = convert_float_to_float16(onnx.load(str(source)), keep_io_types=True)
    onnx.save_model(model, str(target))
    return target


def to_int8_dynamic(source: Path, target: Path) -> Path:
    """Dynamic int8 quantization: int8 weights, activations quantized at run time."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet_quantizer():
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)
    return target


def to_int8_static(source: Path, target: Path, calibration: np.ndarray) -> Path:
    """Static QDQ int8 quantization with MinMax ranges from `calibration` rows."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    with _quiet_quantizer():
        quantize_static(
            str(source),
            str(target),
            _reader(calibration),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
        )
    return target


@contextmanager
def _quiet_quantizer() -> Iterator[None]:
    """The quantizer logs pre-processing advice on the root logger; these graphs need none."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)


def _reader(rows: np.ndarray) -> Any:
    from onnxruntime.quantization import CalibrationDataReader

    class _Batches(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._it: Iterator[dict[str, np.ndarray]] = (
                {"features": rows[i : i + 256]} for i in range(0, len(rows), 256)
            )

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._it, None)

    return _Batches()


def fraud_golden(
    n: int = 8000, high_share: float = 0.03, seed: int = 3, reference: Path | None = None
) -> pd.DataFrame:
    """Rows `id`, f0..f7, `segment` (normal/high), `region`, and `label` if `reference` is given.

    The `high` segment (a rare share of rows) has features ~HIGH_SCALE times larger than usual:
    the kind of traffic a calibration set drawn from ordinary days misses.
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.0, size=(n, len(FEATURES))).astype(np.float32)
    high = rng.random(n) < high_share
    x[high] *= HIGH_SCALE
    frame = pd.DataFrame(x, columns=list(FEATURES))
    frame.insert(0, "id", np.arange(n, dtype=np.int64))
    frame["segment"] = np.where(high, "high", "normal")
    frame["region"] = rng.choice(["eu", "us", "apac"], size=n)
    if reference is not None:
        probs = predict(reference, {"features": x})[0]
        frame["label"] = (rng.random(n) < probs[:, 1]).astype(np.int64)
    return frame


def calibration_rows(n: int = 2000, seed: int = 5, high_share: float = 0.0) -> np.ndarray:
    """Calibration features; `high_share=0` misses the rare high-magnitude segment entirely."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.0, size=(n, len(FEATURES))).astype(np.float32)
    x[rng.random(n) < high_share] *= HIGH_SCALE
    return x


def predict(model: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run a model on CPU (a helper for building labels, not the gate's runtime)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in session.run(None, feeds)]


def fraud_suite(directory: Path) -> dict[str, Path]:
    """The demo's models: reference, fp16, a good int8 and an int8 missing the high segment."""
    directory.mkdir(parents=True, exist_ok=True)
    ref = save(fraud_classifier(), directory / "fraud_fp32.onnx")
    return {
        "reference": ref,
        "fp16": to_float16(ref, directory / "fraud_fp16.onnx"),
        "int8_good": to_int8_static(
            ref, directory / "fraud_int8_good.onnx", calibration_rows(high_share=0.05)
        ),
        "int8_bad": to_int8_static(ref, directory / "fraud_int8_bad.onnx", calibration_rows()),
    }
