"""Suggested fixes, only where the evidence points at one tensor and one tool option.

- An int8 activation over tolerance whose calibrated range the failing rows exceed, at the
  first divergent tensor or the culprit: recalibrate with those rows (`quantize_static`'s
  `calibration_data_reader`); when no other activation clips, alternatively keep that tensor in
  float (`nodes_to_exclude` with its producer and consumers).
- An int8 culprit that no clipping explains (or any culprit of a dynamic int8 build): keep its
  node in float (`nodes_to_exclude` of `quantize_static`, or of `quantize_dynamic`).
- An fp16 build whose first divergent tensor overflows (Inf/NaN where the reference is finite):
  keep that node in float32 (`convert_float_to_float16`'s `node_block_list`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from guards.localize._graph import Plan
from guards.localize._results import ActivationRange, Remedy, TensorError

QUANTIZE = "onnxruntime.quantization.quantize_static"
QUANTIZE_DYNAMIC = "onnxruntime.quantization.quantize_dynamic"
FLOAT16 = "onnxruntime.transformers.float16.convert_float_to_float16"


def remedies(
    p: Plan,
    over: Sequence[TensorError],
    ranges: Sequence[ActivationRange],
    culprit: str | None,
    slice_key: Mapping[str, str] | None,
) -> tuple[Remedy, ...]:
    """Remedies for the tensors over tolerance (`over`, topological), most specific first."""
    if not over:
        return ()
    first = over[0]
    if p.float16:
        return tuple(_overflow(first))
    if not p.ranges and not p.dynamic_int8:
        return ()
    diverged = {e.name for e in over}
    clipped = [r for r in ranges if r.clipped > 0 and r.name in diverged]
    if clipped and clipped[0].name in (first.name, culprit):
        return tuple(_recalibrate(p, clipped[0], clipped[1:], slice_key))
    target = next((e for e in over if e.name == culprit), first)
    tool = QUANTIZE_DYNAMIC if p.dynamic_int8 else QUANTIZE
    option = f"{tool}(nodes_to_exclude=[{_node(target.node, target.op_type, target.name)}])"
    text = f"keep the {target.op_type} producing '{target.name}' in float"
    return (Remedy(target.name, option, text),)


def _overflow(tensor: TensorError) -> Iterator[Remedy]:
    if tensor.nan_or_inf == 0:
        return
    node = _node(tensor.node, tensor.op_type, tensor.name)
    text = f"'{tensor.name}' overflows float16 (|x| > 65504): keep its {tensor.op_type} in float32"
    yield Remedy(tensor.name, f"{FLOAT16}(node_block_list=[{node}], keep_io_types=True)", text)


def _recalibrate(
    p: Plan,
    r: ActivationRange,
    later: Sequence[ActivationRange],
    slice_key: Mapping[str, str] | None,
) -> Iterator[Remedy]:
    rows = ", ".join(f"{k}={v}" for k, v in (slice_key or {}).items()) or "the failing rows"
    text = (
        f"activation '{r.name}' is calibrated to [{r.calibrated_min:.4g}, "
        f"{r.calibrated_max:.4g}] but {rows} reaches [{r.reached_min:.4g}, "
        f"{r.reached_max:.4g}] ({r.clipped:.1%} clipped): recalibrate with {rows} included"
    )
    yield Remedy(r.name, f"{QUANTIZE}(calibration_data_reader=<rows incl. {rows}>)", text)
    # Keeping one tensor in float takes its producer and every consumer out of quantization
    # (either side alone still gets a Q/DQ pair); it helps only if no later divergent tensor
    # clips too.
    nodes = [t for t in p.graph if t.name == r.name and t.op_type != "input"]
    nodes += [t for t in p.graph if r.name in t.inputs]
    if nodes and not later:
        named = ", ".join(dict.fromkeys(_node(t.node, t.op_type, t.name) for t in nodes))
        text = f"or keep '{r.name}' in float (its producer and consumers)"
        yield Remedy(r.name, f"{QUANTIZE}(nodes_to_exclude=[{named}])", text)


def _node(name: str, op_type: str, tensor: str) -> str:
    """A node as the option names it; unnamed nodes must be named first (options match names)."""
    return repr(name) if name else f"<name the unnamed {op_type} producing '{tensor}'>"
