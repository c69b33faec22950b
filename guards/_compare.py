"""Elementwise comparison of one output, with Polygraphy's tolerance semantics.

An element passes when `|c - r| <= atol + rtol * |r|`. Elements where either model gives NaN or
Inf are counted in `nan_or_inf` and always fail the tolerance check (unless both are the same
infinity); the error statistics are computed over the finite pairs only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from guards.results import OutputStats


@dataclass(frozen=True)
class Elementwise:
    """Statistics of one output plus per-row data the criteria and worst rows need."""

    stats: OutputStats
    mismatch_fraction: float
    row_max_abs: np.ndarray


def compare_output(
    reference: np.ndarray, candidate: np.ndarray, atol: float, rtol: float
) -> Elementwise:
    """Compare candidate to reference elementwise (arrays of shape [N, ...])."""
    r = _rows(reference)
    c = _rows(candidate)
    finite = np.isfinite(r) & np.isfinite(c)
    if finite.all():  # the common case, without the masking passes
        diff = np.abs(c - r)
        allowed = atol + rtol * np.abs(r)
        mismatch = float(np.count_nonzero(diff > allowed)) / max(diff.size, 1)
        row_max = diff.max(axis=1) if diff.shape[1] else np.zeros(len(diff))
        return Elementwise(_stats(r.ravel(), c.ravel(), rtol, 0), mismatch, row_max)
    same_inf = ~finite & (r == c)
    diff = np.where(finite, np.abs(c - r), np.inf)
    diff[same_inf] = 0.0
    bad = ~finite & ~same_inf
    allowed = atol + rtol * np.abs(np.where(finite, r, 0.0))
    mismatch = float(np.count_nonzero((diff > allowed) | bad)) / max(diff.size, 1)
    row_max = diff.max(axis=1) if diff.shape[1] else np.zeros(len(diff))
    return Elementwise(_stats(r[finite], c[finite], rtol, int(bad.sum())), mismatch, row_max)


def _rows(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    flat = a.reshape(len(a), -1) if a.ndim else a.reshape(1, 1)
    return flat.astype(np.float64, copy=False)


def _stats(r: np.ndarray, c: np.ndarray, rtol: float, nonfinite: int) -> OutputStats:
    if r.size == 0:
        nan = math.nan
        return OutputStats(nan, nan, nan, nan, nan, nan, nan, nonfinite)
    err = np.abs(c - r)
    abs_r = np.abs(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(abs_r > 0, err / abs_r, np.where(err > 0, np.inf, 0.0))
    return OutputStats(
        max_abs=float(err.max()),
        mean_abs=float(err.mean()),
        p99_abs=float(np.quantile(err, 0.99)),
        max_rel=float(rel.max()),
        cosine=_cosine(r, c),
        sqnr_db=_sqnr_db(r, err),
        min_passing_atol=float(max(0.0, float((err - rtol * abs_r).max()))),
        nan_or_inf=nonfinite,
    )


def _cosine(r: np.ndarray, c: np.ndarray) -> float:
    # Plain reductions, not BLAS: BLAS threads would contend with onnxruntime's on few cores.
    nr, nc = math.sqrt(float(np.sum(r * r))), math.sqrt(float(np.sum(c * c)))
    if nr == 0.0 and nc == 0.0:
        return 1.0
    if nr == 0.0 or nc == 0.0:
        return 0.0
    return float(np.sum(r * c) / (nr * nc))


def _sqnr_db(r: np.ndarray, err: np.ndarray) -> float:
    """Signal-to-quantization-noise ratio; +inf when the outputs are identical."""
    noise = float(np.sum(err * err))
    signal = float(np.sum(r * r))
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)
