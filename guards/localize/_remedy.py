"""Suggested fixes, only where the evidence points at one tensor and one tool option.

- An int8 activation whose calibrated range the failing rows exceed, at the first divergent
  tensor or the culprit: recalibrate with those rows (`quantize_static`'s
  `calibration_data_reader`), or keep its consumers in float (`nodes_to_exclude`).
- An int8 culprit that no clipping explains: keep its node in float (`nodes_to_exclude`).
- An fp16 build whose first divergent tensor overflows (Inf/NaN where the reference is finite):
  keep that node in float32 (`convert_float_to_float16`'s `node_block_list`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from guards.localize._graph import Plan
from guards.localize._results import ActivationRange, Remedy, TensorError

QUANTIZE = "onnxruntime.quantization.quantize_static"
FLOAT16 = "onnxruntime.transformers.float16.convert_float_to_float16"


def remedies(
    p: Plan,
    errors: Sequence[TensorError],
    ranges: Sequence[ActivationRange],
    first: str | None,
    culprit: str | None,
    slice_key: Mapping[str, str] | None,
) -> tuple[Remedy, ...]:
    """Remedies for the divergence found, most specific first; empty when nothing is clear."""
    if first is None:
        return ()
    by_name = {e.name: e for e in errors}
    if p.float16:
        return tuple(_overflow(p, by_name[first]))
    if not p.ranges:
        return ()
    clipped = [r for r in ranges if r.clipped > 0 and r.name in (first, culprit)]
    if clipped:
        return tuple(_recalibrate(p, clipped[0], slice_key))
    target = by_name[culprit or first]
    option = f"{QUANTIZE}(nodes_to_exclude=[{_node(target.node, target.op_type, target.name)}])"
    text = f"keep the {target.op_type} producing '{target.name}' in float"
    return (Remedy(target.name, option, text),)


def _overflow(p: Plan, tensor: TensorError) -> Iterator[Remedy]:
    if tensor.nan_or_inf == 0:
        return
    node = _node(tensor.node, tensor.op_type, tensor.name)
    text = f"'{tensor.name}' overflows float16 (|x| > 65504): keep its {tensor.op_type} in float32"
    yield Remedy(tensor.name, f"{FLOAT16}(node_block_list=[{node}], keep_io_types=True)", text)


def _recalibrate(
    p: Plan, r: ActivationRange, slice_key: Mapping[str, str] | None
) -> Iterator[Remedy]:
    rows = ", ".join(f"{k}={v}" for k, v in (slice_key or {}).items()) or "the failing rows"
    text = (
        f"activation '{r.name}' is calibrated to [{r.calibrated_min:.4g}, "
        f"{r.calibrated_max:.4g}] but {rows} reaches [{r.reached_min:.4g}, "
        f"{r.reached_max:.4g}] ({r.clipped:.1%} clipped): recalibrate with {rows} included"
    )
    yield Remedy(r.name, f"{QUANTIZE}(calibration_data_reader=<rows incl. {rows}>)", text)
    consumers = [t for t in p.tensors if r.name in t.inputs]
    if consumers:
        nodes = ", ".join(dict.fromkeys(_node(t.node, t.op_type, t.name) for t in consumers))
        text = f"or keep the consumers of '{r.name}' in float"
        yield Remedy(r.name, f"{QUANTIZE}(nodes_to_exclude=[{nodes}])", text)


def _node(name: str, op_type: str, tensor: str) -> str:
    """A node as the option names it; unnamed nodes must be named first (options match names)."""
    return repr(name) if name else f"<name the unnamed {op_type} producing '{tensor}'>"
