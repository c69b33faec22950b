"""ONNX Runtime sessions on the serving hardware: provider choice, signatures, batched runs.

onnxruntime is imported inside functions so importing `guards` stays light. GPU providers are
requested only when a GPU is really usable (NVIDIA device files and a loadable libcuda), because
onnxruntime lists CUDA and TensorRT as *available* whenever the GPU wheel is installed and then
logs load errors before falling back to CPU. What actually ran is `session.get_providers()`.
"""

from __future__ import annotations

import ctypes
import glob
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from monitor.common import progress
from monitor.errors import InputError

GPU_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider")
CPU = "CPUExecutionProvider"

# ONNX tensor element types as onnxruntime names them.
DTYPES: Mapping[str, Any] = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output: name, ONNX type and shape (None for symbolic dims)."""

    name: str
    type: str
    shape: tuple[int | None, ...]

    def describe(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.name} {self.type}[{dims}]"


@dataclass(frozen=True)
class Signature:
    """A model's inputs and outputs."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


@lru_cache(maxsize=1)
def gpu_usable() -> bool:
    """True when an NVIDIA device is present and the CUDA driver library loads."""
    if not glob.glob("/dev/nvidia[0-9]*"):
        return False
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def select_providers(requested: Sequence[str] | None = None) -> list[str]:
    """Providers to ask for: `requested` as given, else TensorRT, CUDA (GPU present), CPU."""
    import onnxruntime as ort

    available = ort.get_available_providers()
    if requested:
        missing = [p for p in requested if p not in available]
        if missing:
            raise InputError(
                f"execution provider(s) {', '.join(missing)} not available; "
                f"available: {', '.join(available)}"
            )
        return list(requested)
    wanted = [p for p in GPU_PROVIDERS if p in available] if gpu_usable() else []
    return [*wanted, CPU]


def session_options(intra_op_threads: int = 0) -> Any:
    """The options both models of a gate share, so latency compares like with like."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = intra_op_threads
    opts.log_severity_level = 3
    return opts


def open_session(
    path: Path, providers: Sequence[str], options: Any, data: bytes | None = None
) -> Any:
    """An InferenceSession for `path` (from `data`, its bytes already read, when given);
    InputError naming the file if it cannot be loaded."""
    import onnxruntime as ort

    if data is None and not path.is_file():
        raise InputError(f"{path}: model file not found")
    model = str(path) if data is None else data
    try:
        return ort.InferenceSession(model, sess_options=options, providers=list(providers))
    except Exception as exc:  # onnxruntime raises its own untyped errors on bad models
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: cannot load ONNX model: {first}") from None


def signature(session: Any) -> Signature:
    """The inputs and outputs of a session."""

    def specs(items: Sequence[Any]) -> tuple[TensorSpec, ...]:
        return tuple(
            TensorSpec(i.name, i.type, tuple(d if isinstance(d, int) else None for d in i.shape))
            for i in items
        )

    return Signature(specs(session.get_inputs()), specs(session.get_outputs()))


def run_batched(
    session: Any, feeds: Mapping[str, np.ndarray], batch_size: int
) -> dict[str, np.ndarray]:
    """Run all rows through `session` in batches; outputs concatenated along the first axis."""
    n = len(next(iter(feeds.values())))
    names = [o.name for o in session.get_outputs()]
    parts: list[list[np.ndarray]] = [[] for _ in names]
    progress.begin("golden rows", n)
    for start in range(0, n, batch_size):
        batch = {k: v[start : start + batch_size] for k, v in feeds.items()}
        for acc, out in zip(parts, session.run(names, batch), strict=True):
            acc.append(np.asarray(out))
        progress.advance(min(batch_size, n - start))
    return {name: np.concatenate(acc, axis=0) for name, acc in zip(names, parts, strict=True)}
