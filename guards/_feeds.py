"""Turning golden rows into model inputs, and checking that two models are comparable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from guards._runtime import DTYPES, Signature, TensorSpec
from guards.golden import GoldenSet
from monitor.errors import SchemaMismatchError


def check_comparable(reference: Signature, candidate: Signature) -> None:
    """Reference and candidate must take the same inputs and give the same outputs."""
    for kind in ("inputs", "outputs"):
        ref = {s.name: s.type for s in getattr(reference, kind)}
        cand = {s.name: s.type for s in getattr(candidate, kind)}
        if ref != cand:
            raise SchemaMismatchError(
                f"reference and candidate have different {kind}: "
                f"reference {_list(getattr(reference, kind))}; "
                f"candidate {_list(getattr(candidate, kind))}"
            )


def _list(specs: Sequence[TensorSpec]) -> str:
    return ", ".join(s.describe() for s in specs) or "none"


def build_feeds(golden: GoldenSet, sig: Signature) -> dict[str, np.ndarray]:
    """One 2-D input takes the feature columns in order; several inputs take their own columns."""
    if len(sig.inputs) == 1 and len(sig.inputs[0].shape) == 2:
        spec = sig.inputs[0]
        if spec.name in golden.frame.columns and spec.shape[1] in (1, None):
            return {spec.name: _column(golden, spec)}
        return {spec.name: _matrix(golden, spec)}
    return {spec.name: _column(golden, spec) for spec in sig.inputs}


def _dtype(golden: GoldenSet, spec: TensorSpec) -> np.dtype[np.generic]:
    if spec.type not in DTYPES:
        raise SchemaMismatchError(
            f"{golden.path}: model input {spec.describe()} has a type the gate cannot feed"
        )
    dtype: np.dtype[np.generic] = np.dtype(DTYPES[spec.type])
    return dtype


def _matrix(golden: GoldenSet, spec: TensorSpec) -> np.ndarray:
    cols = list(golden.features)
    width = spec.shape[1]
    if width is not None and width != len(cols):
        raise SchemaMismatchError(
            f"{golden.path}: model input {spec.describe()} expects {width} feature columns, "
            f"the golden set has {len(cols)} ({_names(cols)}){_suspects(golden, cols, width)}; "
            "choose them with --features"
        )
    return _cast(golden, cols, spec)


def _column(golden: GoldenSet, spec: TensorSpec) -> np.ndarray:
    if spec.name not in golden.frame.columns:
        raise SchemaMismatchError(
            f"{golden.path}: no column named after model input {spec.describe()}"
        )
    if len(spec.shape) not in (1, 2) or (len(spec.shape) == 2 and spec.shape[1] not in (1, None)):
        raise SchemaMismatchError(
            f"{golden.path}: model input {spec.describe()} is not one value per row; "
            "a column can feed only shape [N] or [N, 1]"
        )
    values = _cast(golden, [spec.name], spec)
    return values if len(spec.shape) == 2 else values[:, 0]


def _cast(golden: GoldenSet, cols: list[str], spec: TensorSpec) -> np.ndarray:
    dtype = _dtype(golden, spec)
    block = golden.frame[cols]
    bad = [c for c in cols if not _numeric(block[c].dtype)]
    if bad:
        raise SchemaMismatchError(
            f"{golden.path}: column(s) {_names(bad)} are not numeric but feed model input "
            f"{spec.describe()}"
        )
    return np.ascontiguousarray(block.to_numpy(dtype=dtype))


def _suspects(golden: GoldenSet, cols: list[str], width: int) -> str:
    """Name the columns that are most likely not features: the non-numeric ones, else the tail.

    A list cut at six names would hide the one extra column among 65.
    """
    text = [c for c in cols if not _numeric(golden.frame[c].dtype)]
    if text:
        return f"; not numeric, so not a feature: {', '.join(text)}"
    if len(cols) > width:
        return f"; columns past the first {width}: {', '.join(cols[width:][:10])}"
    return ""


def _numeric(dtype: Any) -> bool:
    from pandas.api.types import is_numeric_dtype

    return bool(is_numeric_dtype(dtype))


def _names(cols: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(cols[:limit])
    return shown + (f", ... ({len(cols)} in all)" if len(cols) > limit else "")
