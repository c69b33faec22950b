"""Reading both graphs: which intermediate tensors match, and models that expose them.

A reference tensor matches the candidate tensor of the same name, except where the candidate
quantizes it: a QuantizeLinear -> DequantizeLinear pair stands for the float tensor it
quantizes, and its DequantizeLinear output (what the next node really sees, clipping included)
is compared. Tensors the candidate alone has (fp16 conversion's Cast nodes, quantization
scaffolding) have no reference counterpart and drop out. Only tensors computed from the graph
inputs are compared: weights and constants are the same for every row.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from monitor.errors import InputError

FLOAT_TYPES = frozenset({1, 10, 11, 16})  # TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16


@dataclass(frozen=True)
class Tensor:
    """A reference tensor: its producer (op 'input' for a graph input) and that node's inputs."""

    name: str
    op_type: str
    node: str
    inputs: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """What to compare and the two models, each exposing its side of every matched tensor."""

    tensors: tuple[Tensor, ...]
    graph: tuple[Tensor, ...]  # every reference tensor, matched or not, in topological order
    candidate_names: Mapping[str, str]
    ranges: Mapping[str, tuple[float, float]]
    float16: bool
    dynamic_int8: bool
    reference: bytes
    candidate: bytes


def plan(
    reference: Path,
    candidate: Path,
    reference_data: bytes | None = None,
    candidate_data: bytes | None = None,
) -> Plan:
    """Match the two graphs' tensors and build the models that expose them (from the files'
    bytes when given, else read from the files)."""
    ref, cand = _load(reference, reference_data), _load(candidate, candidate_data)
    ref_tensors = _tensors(ref)
    cand_dynamic = _dynamic(cand.graph) | {i.name for i in cand.graph.input}
    aliases = _dequantized(cand.graph)
    skip = _non_float(ref)
    matched: list[Tensor] = []
    names: dict[str, str] = {}
    for tensor in ref_tensors:
        other = aliases.get(tensor.name, tensor.name)
        if tensor.name in skip or other not in cand_dynamic:
            continue
        if tensor.op_type == "input" and other == tensor.name:
            continue  # fed identically to both models: nothing to compare
        matched.append(tensor)
        names[tensor.name] = other
    return Plan(
        tensors=tuple(matched),
        graph=tuple(ref_tensors),
        candidate_names=names,
        ranges=_calibrated(cand.graph),
        float16=_has_float16(cand),
        dynamic_int8=any(n.op_type == "DynamicQuantizeLinear" for n in cand.graph.node),
        reference=_expose(ref, [t.name for t in matched if t.op_type != "input"], reference),
        candidate=_expose(cand, list(names.values()), candidate),
    )


def _load(path: Path, data: bytes | None) -> Any:
    import onnx

    try:
        return onnx.load(str(path)) if data is None else onnx.load_from_string(data)
    except Exception as exc:  # protobuf and onnx raise untyped errors on unreadable files
        raise InputError(f"{path}: cannot read ONNX graph for localisation: {exc}") from None


def _tensors(model: Any) -> list[Tensor]:
    """Graph inputs, then node outputs in topological order."""
    graph = model.graph
    dynamic = _dynamic(graph)
    inits = {i.name for i in graph.initializer}
    out = [Tensor(i.name, "input", "", ()) for i in graph.input if i.name not in inits]
    for node in _ordered(graph):
        inputs = tuple(i for i in node.input if i)
        out += [
            Tensor(o, node.op_type, node.name, inputs) for o in node.output if o and o in dynamic
        ]
    return out


def _dynamic(graph: Any) -> set[str]:
    """Tensors that depend on a graph input (the rest are constants)."""
    inits = {i.name for i in graph.initializer}
    live = {i.name for i in graph.input if i.name not in inits}
    for node in _ordered(graph):
        if any(i in live for i in node.input):
            live.update(o for o in node.output if o)
    return live - {i.name for i in graph.input}


def _ordered(graph: Any) -> list[Any]:
    """Nodes in topological order: tools that edit graphs (fp16 conversion) append out of order."""
    produced = {o: i for i, n in enumerate(graph.node) for o in n.output if o}
    waiting = [
        {produced[x] for x in n.input if x in produced and produced[x] != i}
        for i, n in enumerate(graph.node)
    ]
    users: dict[int, list[int]] = {}
    for i, deps in enumerate(waiting):
        for d in deps:
            users.setdefault(d, []).append(i)
    ready = deque(i for i, deps in enumerate(waiting) if not deps)
    order: list[int] = []
    while ready:
        i = ready.popleft()
        order.append(i)
        for u in users.get(i, ()):
            waiting[u].discard(i)
            if not waiting[u]:
                ready.append(u)
    # A cyclic (invalid) graph keeps its remaining nodes in file order rather than losing them.
    seen = set(order)
    return [graph.node[i] for i in (*order, *(i for i in range(len(graph.node)) if i not in seen))]


def _dequantized(graph: Any) -> dict[str, str]:
    """Float tensor -> the DequantizeLinear output of the Q/DQ pair that quantizes it."""
    quantized = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "QuantizeLinear"}
    return {
        quantized[n.input[0]]: n.output[0]
        for n in graph.node
        if n.op_type == "DequantizeLinear" and n.input[0] in quantized
    }


def _non_float(model: Any) -> set[str]:
    """Tensors shape inference types as non-float (labels, shapes) or non-tensor (ZipMap)."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # inference is best effort; unknown types are filtered after the run
        return set()
    graph = inferred.graph
    skip = set()
    for info in (*graph.value_info, *graph.output, *graph.input):
        kind = info.type.WhichOneof("value")
        if kind is None:
            continue
        if kind != "tensor_type" or info.type.tensor_type.elem_type not in FLOAT_TYPES:
            skip.add(info.name)
    return skip


def _calibrated(graph: Any) -> dict[str, tuple[float, float]]:
    """DequantizeLinear output -> the float range its per-tensor scale and zero point cover."""
    import onnx.numpy_helper as nh

    inits = {i.name: nh.to_array(i) for i in graph.initializer}
    quantize = {n.output[0]: n for n in graph.node if n.op_type == "QuantizeLinear"}
    out: dict[str, tuple[float, float]] = {}
    for node in graph.node:
        q = quantize.get(node.input[0]) if node.op_type == "DequantizeLinear" else None
        if q is None or len(q.input) < 2 or q.input[1] not in inits:
            continue
        scale = inits[q.input[1]]
        zero = inits.get(q.input[2]) if len(q.input) > 2 else np.zeros((), np.uint8)
        if scale.size != 1 or zero is None or zero.dtype.kind not in "iu":
            continue  # per-channel (weights) or float8: no single activation range
        info = np.iinfo(zero.dtype)
        s, z = float(scale.reshape(())), float(zero.reshape(()))
        out[node.output[0]] = ((info.min - z) * s, (info.max - z) * s)
    return out


def _has_float16(model: Any) -> bool:
    graph = model.graph
    return any(i.data_type == 10 for i in graph.initializer) or any(
        n.op_type == "Cast" and any(a.name == "to" and a.i == 10 for a in n.attribute)
        for n in graph.node
    )


def _expose(model: Any, names: list[str], path: Path) -> bytes:
    """The model, serialized, with `names` added as graph outputs (types left to the runtime)."""
    import onnx

    have = {o.name for o in model.graph.output}
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names if n not in have)
    try:
        data: bytes = model.SerializeToString()
    except ValueError as exc:  # protobuf's 2 GiB message limit
        raise InputError(f"{path}: too large to localise in memory: {exc}") from None
    return data
