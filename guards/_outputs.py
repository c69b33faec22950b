"""Model outputs as users export them, turned into arrays the comparison understands.

scikit-learn models converted with skl2onnx give a label tensor (int64 or string) and, by
default, a ZipMap: a sequence of ``{class: probability}`` maps. The gate compares:

- numeric tensors as they are;
- ``seq(map(K, tensor(float|double)))`` as a float [N, classes] array, columns in sorted class
  order (both models must name the same classes);
- ``tensor(string)`` labels as int64 codes over the sorted classes both models give;
- class outputs (integer, bool or string, one value per row) by flips and metrics only, never
  by max_abs, cosine or SQNR: class 7 against class 0 is not "7 apart".

Anything else (maps, sequences of tensors, ...) is an `InputError` naming the output and its
ONNX type, raised before any inference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from guards._runtime import DTYPES, TensorSpec
from monitor.errors import InputError

_ZIPMAP = re.compile(r"^seq\(map\((int64|string),\s*tensor\((float|double)\)\)\)$")
_STRING = "tensor(string)"


def check_supported(outputs: Sequence[TensorSpec]) -> None:
    """Every output is a tensor the gate can compare or a ZipMap; else one clear line."""
    for spec in outputs:
        if spec.type in DTYPES or spec.type == _STRING or _ZIPMAP.match(spec.type):
            continue
        raise InputError(
            f"model output {spec.name!r} has ONNX type {spec.type}, which the gate cannot "
            "compare (supported: numeric, bool and string tensors, and ZipMap "
            "seq(map(int64|string, tensor(float))))"
        )


def comparable(
    reference: Mapping[str, np.ndarray], candidate: Mapping[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Both models' outputs as numeric arrays (ZipMaps as [N, classes], strings as codes)."""
    ref_out: dict[str, np.ndarray] = {}
    cand_out: dict[str, np.ndarray] = {}
    for name in reference:
        ref_out[name], cand_out[name] = _pair(name, reference[name], candidate[name])
    return ref_out, cand_out


def is_class_output(values: np.ndarray) -> bool:
    """Integer (bools and strings arrive as codes), one value per row: class ids, compared by
    flips, not by distance."""
    column = values.ndim == 1 or (values.ndim == 2 and values.shape[1] == 1)
    return column and bool(np.issubdtype(values.dtype, np.integer))


def _pair(name: str, ref: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if ref.dtype == np.bool_:  # decisions: class ids 0/1, so they are judged by flips
        return ref.astype(np.int64), cand.astype(np.int64)
    if ref.dtype != object and ref.dtype.kind not in "US":
        return ref, cand
    first = _first(ref)
    if isinstance(first, Mapping):
        classes = _classes(name, ref, cand)
        return _zipmap(name, ref, classes), _zipmap(name, cand, classes)
    if first is None or isinstance(first, str | bytes):
        vocabulary = np.unique(np.concatenate([ref.reshape(-1), cand.reshape(-1)]).astype(str))
        return _codes(ref, vocabulary), _codes(cand, vocabulary)
    raise InputError(
        f"model output {name!r} holds {type(first).__name__} values, which the gate cannot compare"
    )


def _first(values: np.ndarray) -> Any:
    return values.reshape(-1)[0] if values.size else None


def _classes(name: str, ref: np.ndarray, cand: np.ndarray) -> list[Any]:
    keys = {tuple(sorted(m)) for m in (*ref.reshape(-1), *cand.reshape(-1))}
    if len(keys) != 1:
        raise InputError(
            f"model output {name!r}: the ZipMap rows do not all name the same classes "
            f"({len(keys)} different class sets between reference and candidate)"
        )
    return list(next(iter(keys)))


def _zipmap(name: str, values: np.ndarray, classes: list[Any]) -> np.ndarray:
    rows = values.reshape(-1)
    out = np.empty((len(rows), len(classes)), dtype=np.float64)
    for i, row in enumerate(rows):
        out[i] = [row[c] for c in classes]
    return out


def _codes(values: np.ndarray, vocabulary: np.ndarray) -> np.ndarray:
    codes = np.searchsorted(vocabulary, values.astype(str))
    return np.asarray(codes, dtype=np.int64)
