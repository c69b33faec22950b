"""Mergeable per-tensor error sums, so a sample is replayed in batches with bounded memory.

Pairs where either model gives NaN or Inf are counted apart (and make max_abs infinite when
the reference is finite there); the other statistics are over finite pairs only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class ErrorSums:
    """Running sums of one tensor's candidate-vs-reference error."""

    max_abs: float = 0.0
    max_ref: float = 0.0
    signal: float = 0.0
    noise: float = 0.0
    dot: float = 0.0
    cand_energy: float = 0.0
    nonfinite: int = 0
    slice_max_abs: float = 0.0
    reached_min: float = math.inf
    reached_max: float = -math.inf
    outside: int = 0
    reached_count: int = 0

    def add(self, ref: np.ndarray, cand: np.ndarray, in_slice: np.ndarray) -> None:
        """Fold one batch in; `in_slice` marks the batch's rows of the failing slice."""
        r = ref.reshape(len(ref), -1).astype(np.float64, copy=False)
        c = cand.reshape(len(cand), -1).astype(np.float64, copy=False)
        # Sums propagate NaN and Inf: two reductions decide whether the masked path is needed.
        if math.isfinite(float(r.sum()) + float(c.sum())):
            self._add_finite(r, c, in_slice)
        else:
            self._add_masked(r, c, in_slice)

    def _add_finite(self, r: np.ndarray, c: np.ndarray, in_slice: np.ndarray) -> None:
        d = c - r
        flat_r, flat_c, flat_d = r.ravel(), c.ravel(), d.ravel()
        if flat_d.size == 0:
            return
        self.max_abs = max(self.max_abs, float(-flat_d.min()), float(flat_d.max()))
        self.max_ref = max(self.max_ref, float(-flat_r.min()), float(flat_r.max()))
        # einsum, not BLAS dot: BLAS threads contend with onnxruntime's on few cores (20x slower).
        self.signal += float(np.einsum("i,i->", flat_r, flat_r))
        self.noise += float(np.einsum("i,i->", flat_d, flat_d))
        self.dot += float(np.einsum("i,i->", flat_r, flat_c))
        self.cand_energy += float(np.einsum("i,i->", flat_c, flat_c))
        if in_slice.any():
            self.slice_max_abs = max(self.slice_max_abs, float(np.abs(d[in_slice]).max()))

    def _add_masked(self, r: np.ndarray, c: np.ndarray, in_slice: np.ndarray) -> None:
        finite = np.isfinite(r) & np.isfinite(c)
        broken = ~finite & np.isfinite(r)  # the candidate alone left the finite numbers
        self.nonfinite += int(np.count_nonzero(~finite & (r != c)))
        err = np.where(finite, np.abs(c - r), 0.0)
        err[broken] = math.inf
        rf, cf = np.where(finite, r, 0.0), np.where(finite, c, 0.0)
        self.max_abs = max(self.max_abs, float(err.max(initial=0.0)))
        self.max_ref = max(self.max_ref, float(np.abs(rf).max(initial=0.0)))
        self.signal += float(np.sum(rf * rf))
        self.noise += float(np.sum(np.where(finite, err, 0.0) ** 2))
        self.dot += float(np.sum(rf * cf))
        self.cand_energy += float(np.sum(cf * cf))
        if in_slice.any():
            self.slice_max_abs = max(self.slice_max_abs, float(err[in_slice].max(initial=0.0)))

    def reach(self, ref: np.ndarray, bounds: tuple[float, float]) -> None:
        """Record the range the reference reaches against a calibrated range."""
        r = ref[np.isfinite(ref)].astype(np.float64, copy=False)
        if r.size == 0:
            return
        self.reached_min = min(self.reached_min, float(r.min()))
        self.reached_max = max(self.reached_max, float(r.max()))
        self.outside += int(np.count_nonzero((r < bounds[0]) | (r > bounds[1])))
        self.reached_count += int(r.size)

    @property
    def rel_err(self) -> float:
        """max_abs relative to the reference tensor's largest magnitude."""
        if self.max_ref == 0.0:
            return 0.0 if self.max_abs == 0.0 else math.inf
        return self.max_abs / self.max_ref

    @property
    def sqnr_db(self) -> float:
        if self.noise == 0.0:
            return math.inf if self.nonfinite == 0 else -math.inf
        if self.signal == 0.0:
            return -math.inf
        return 10.0 * math.log10(self.signal / self.noise)

    @property
    def cosine(self) -> float:
        nr, nc = math.sqrt(self.signal), math.sqrt(self.cand_energy)
        if nr == 0.0 and nc == 0.0:
            return 1.0
        if nr == 0.0 or nc == 0.0:
            return 0.0
        return self.dot / (nr * nc)
