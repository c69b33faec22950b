"""Multivariate drift by PCA reconstruction error (as NannyML's data reconstruction drift).

Fitted once on the reference: missing values imputed (numeric: mean, categorical: most frequent),
categories encoded as their reference share (unseen: 0), every column standardised, and the
principal components kept that explain `variance` of the total. A row's error is the distance
between it and its projection back from those components; a chunk's value is its mean error,
compared with the band the same value over the reference's chunks gives a new chunk.

The band is NannyML's mean ± 3 std of the reference chunks' values, widened to a prediction
interval for one more chunk (`band_k`): with m reference chunks the spread is itself an
estimate from m values, and ± 3 of it alarmed on 1-3% of clean chunks with 10 reference
chunks (nominal 0.27%: bench/calibration_decisions.py, docs "Calibration"). With many chunks
the two agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from monitor.errors import InputError
from monitor.estimation._calibration import Array
from monitor.estimation._encoding import Scorer, ShareLookup, build_scorer
from monitor.estimation._results import Chunk, chunk_bounds, prediction_band

DEFAULT_VARIANCE = 0.65
MultivariateStatus = Literal["ok", "drift", "insufficient_data"]


@dataclass(frozen=True)
class ReconstructionModel:
    """Everything needed to score rows: per column the fill value and (categorical) the share
    of each reference category; standardisation; the kept components (rows)."""

    columns: tuple[str, ...]
    categorical: tuple[str, ...]
    fill: tuple[Any, ...]
    shares: tuple[tuple[tuple[str, float], ...], ...]  # per categorical column
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    components: tuple[tuple[float, ...], ...]
    explained: float
    scorer: Scorer = field(init=False, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns), "categorical": list(self.categorical),
            "fill": list(self.fill), "shares": [[list(kv) for kv in s] for s in self.shares],
            "mean": list(self.mean), "scale": list(self.scale),
            "components": [list(r) for r in self.components], "explained": self.explained,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReconstructionModel:
        """Inverse of to_dict (KeyError/TypeError/ValueError on a damaged document)."""
        categorical = tuple(str(c) for c in data["categorical"])
        return cls(
            tuple(str(c) for c in data["columns"]), categorical,
            tuple(data["fill"]),
            tuple(tuple((str(k), float(v)) for k, v in s) for s in data["shares"]),
            tuple(float(v) for v in data["mean"]), tuple(float(v) for v in data["scale"]),
            tuple(tuple(float(v) for v in r) for r in data["components"]),
            float(data["explained"]),
        )  # fmt: skip

    def __post_init__(self) -> None:
        scorer = build_scorer(
            self.columns, _lookups(self), self.fill, self.mean, self.scale, self.components
        )
        object.__setattr__(self, "scorer", scorer)


@dataclass(frozen=True)
class MultivariateResult:
    """Mean reconstruction error of a chunk (None: the whole current data) and its verdict."""

    chunk: Chunk | None
    value: float | None
    threshold_low: float | None
    threshold_high: float | None
    n: int
    status: MultivariateStatus


def fit_reconstruction(
    frame: Any, columns: Sequence[str], variance: float = DEFAULT_VARIANCE
) -> ReconstructionModel:
    """Fit imputation, encoding, scaling and PCA on the reference `frame`."""
    if not columns:
        raise InputError("multivariate drift needs at least one feature column")
    if len(frame) < 2:
        raise InputError("multivariate drift needs at least 2 reference rows")
    categorical = tuple(c for c in columns if _is_categorical(frame[c]))
    fill = tuple(_fill_value(frame[c], c in categorical) for c in columns)
    shares = tuple(_shares(frame[c], fill[columns.index(c)]) for c in categorical)
    partial = ReconstructionModel(tuple(columns), categorical, fill, shares, (), (), (), 0.0)
    x = _encode(partial, frame)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0  # a constant column carries no variance (as StandardScaler)
    z = (x - mean) / scale
    _, s, vt = np.linalg.svd(z, full_matrices=False)
    ratio = (s**2) / max(float((s**2).sum()), 1e-300)
    keep = min(int(np.searchsorted(np.cumsum(ratio), variance, side="right")) + 1, vt.shape[0])
    return ReconstructionModel(
        partial.columns, categorical, fill, shares,
        tuple(float(v) for v in mean), tuple(float(v) for v in scale),
        tuple(tuple(float(v) for v in row) for row in vt[:keep]),
        float(np.cumsum(ratio)[keep - 1]),
    )  # fmt: skip


def reconstruction_errors(model: ReconstructionModel, frame: Any) -> Array:
    """Each row's distance from its reconstruction (missing values imputed as on reference)."""
    return model.scorer.errors(_arrays(model, frame), len(frame))


def multivariate_drift(
    model: ReconstructionModel, reference: Any, current: Any, chunk_size: int | None = None,
    min_n: int = 2, periods: tuple[Sequence[Chunk], Sequence[Chunk]] | None = None,
    bounds: tuple[float | None, float | None] | None = None,
) -> list[MultivariateResult]:  # fmt: skip
    """Per chunk of `current` (or all of it), the mean error against reference-chunk bounds;
    `periods` (current, reference chunks by time) replaces `chunk_size`; stored `bounds`
    replace the reference (then None)."""
    if bounds is None:
        ref_err = reconstruction_errors(model, reference)
        ref_chunks = periods[1] if periods else chunk_bounds(ref_err.size, chunk_size)
        bounds = chunk_mean_bounds(ref_err, ref_chunks, min_n)
    low, high = bounds
    errors = reconstruction_errors(model, current)
    chunks: list[Chunk | None] = (
        list(periods[0]) if periods
        else list(chunk_bounds(errors.size, chunk_size)) if chunk_size else [None]
    )  # fmt: skip
    out = []
    for chunk in chunks:
        part = errors if chunk is None else errors[chunk.start : chunk.end]
        out.append(_verdict(chunk, part, low, high, min_n))
    return out


def chunk_mean_bounds(
    errors: Array, chunks: Sequence[Chunk], min_n: int = 2
) -> tuple[float | None, float | None]:
    """Mean ± `band_k` std of the chunks' mean errors (None, None: fewer than 2 chunks)."""
    means = [errors[c.start : c.end].mean() for c in chunks if c.end - c.start >= min_n]
    return prediction_band(np.asarray(means, dtype=np.float64))


def _verdict(
    chunk: Chunk | None, errors: Array, low: float | None, high: float | None, min_n: int
) -> MultivariateResult:
    mean = float(errors.mean()) if errors.size else 0.0
    return judge_mean(chunk, mean, int(errors.size), (low, high), min_n)


def judge_mean(
    chunk: Chunk | None, mean: float, n: int, bounds: tuple[float | None, float | None],
    min_n: int = 2,
) -> MultivariateResult:  # fmt: skip
    """The verdict on a mean reconstruction error over `n` rows: `drift` outside the bounds,
    `insufficient_data` under `min_n` rows."""
    low, high = bounds
    if n < min_n:
        return MultivariateResult(chunk, None, low, high, n, "insufficient_data")
    drifted = (low is not None and mean < low) or (high is not None and mean > high)
    return MultivariateResult(chunk, mean, low, high, n, "drift" if drifted else "ok")


def _is_categorical(column: Any) -> bool:
    return str(column.dtype) in ("object", "string", "category", "bool", "str")


def _fill_value(column: Any, categorical: bool) -> Any:
    known = column.dropna()
    if known.empty:
        return "(null)" if categorical else 0.0
    if categorical:
        return str(known.astype(str).value_counts().idxmax())
    return float(known.astype(float).mean())


def _shares(column: Any, fill: Any) -> tuple[tuple[str, float], ...]:
    counts = column.astype(object).where(column.notna(), fill).astype(str).value_counts()
    total = float(counts.sum())
    return tuple((str(k), float(v) / total) for k, v in counts.items())


def _lookups(model: ReconstructionModel) -> list[ShareLookup | None]:
    share_of = dict(zip(model.categorical, model.shares, strict=True))
    return [ShareLookup.build(share_of[c], f) if c in share_of else None
            for c, f in zip(model.columns, model.fill, strict=True)]  # fmt: skip


def _arrays(model: ReconstructionModel, frame: Any) -> dict[str, Array]:
    """Column arrays of `frame` for the scorer: object arrays for categorical columns (strings
    as they are; other dtypes with None where missing), floats (NaN where missing) otherwise."""
    missing = [c for c in model.columns if c not in frame.columns]
    if missing:
        raise InputError(f"column '{missing[0]}' not found (a multivariate feature)")
    out: dict[str, Array] = {}
    for col in model.columns:
        values = frame[col]
        if col in model.categorical:
            if values.dtype != object:
                values = values.astype(object).where(values.notna(), None)
            out[col] = values.to_numpy(dtype=object)
        else:
            out[col] = values.astype(float).to_numpy(dtype=np.float64)
    return out


def _encode(model: ReconstructionModel, frame: Any) -> Array:
    return model.scorer.encode(_arrays(model, frame), len(frame))
