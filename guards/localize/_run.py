"""Replay a bounded sample through both models with every matched tensor exposed."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from guards.localize._accumulate import ErrorSums
from guards.localize._graph import Plan, Tensor, plan
from guards.localize._remedy import remedies
from guards.localize._results import ActivationRange, Localization, TensorError
from monitor.errors import InputError

BATCH_ROWS = 1024  # bounded batches keep exposed intermediates small and the budget checked often


@dataclass(frozen=True)
class LocalizeJob:
    """Two models, their (already built) feeds, the failing slice's rows, and the bounds."""

    reference: Path
    candidate: Path
    feeds: Mapping[str, np.ndarray]
    providers: Sequence[str]
    options: Any
    tolerance: float
    budget_s: float = 30.0
    max_rows: int = 2048
    slice_key: Mapping[str, str] | None = None
    slice_rows: np.ndarray | None = field(default=None, repr=False)
    # The files' bytes when the caller already read them (a gate run reads each file once).
    reference_data: bytes | None = field(default=None, repr=False)
    candidate_data: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.max_rows < 1 or self.budget_s <= 0 or not self.tolerance > 0:
            raise InputError("localisation needs max_rows >= 1, budget > 0 and tolerance > 0")


def localize(job: LocalizeJob) -> Localization:
    """Per-tensor errors in topological order, the first divergent tensor and the culprit."""
    start = time.perf_counter()
    p = plan(job.reference, job.candidate, job.reference_data, job.candidate_data)
    n = len(next(iter(job.feeds.values())))
    rows, n_slice = sample_rows(n, job.slice_rows, job.max_rows)
    ref = _session(p.reference, job, job.reference)
    cand = _session(p.candidate, job, job.candidate)
    sums: dict[str, ErrorSums] = {t.name: ErrorSums() for t in p.tensors}
    unusable: set[str] = set()
    done = 0
    for lo in range(0, len(rows), BATCH_ROWS):
        batch = rows[lo : lo + BATCH_ROWS]
        # Ranges are judged on the failing slice's rows when there is one, else on all rows.
        in_slice = np.arange(lo, lo + len(batch)) < n_slice
        reach = in_slice if n_slice else np.ones(len(batch), dtype=bool)
        feeds = {k: v[batch] for k, v in job.feeds.items()}
        outs = _outputs(ref, feeds, True), _outputs(cand, feeds, False)
        _fold(p, *outs, in_slice, reach, sums, unusable)
        done += len(batch)
        if time.perf_counter() - start > job.budget_s:
            break
    kept = tuple(t for t in p.tensors if t.name not in unusable)
    return _result(job, p, kept, sums, done, len(rows), time.perf_counter() - start)


def sample_rows(
    n: int, slice_rows: np.ndarray | None, max_rows: int, seed: int = 0
) -> tuple[np.ndarray, int]:
    """At most `max_rows` row positions, the failing slice's first; and how many are its."""
    rng = np.random.default_rng(seed)
    first = np.asarray(slice_rows if slice_rows is not None else [], dtype=np.int64)
    if len(first) > max_rows:
        first = np.sort(rng.choice(first, max_rows, replace=False))
    rest = np.setdiff1d(np.arange(n, dtype=np.int64), first)
    take = min(max_rows - len(first), len(rest))
    rest = np.sort(rng.choice(rest, take, replace=False))
    return np.concatenate([first, rest]), len(first)


def _session(data: bytes, job: LocalizeJob, path: Path) -> Any:
    import onnxruntime as ort

    try:
        return ort.InferenceSession(data, sess_options=job.options, providers=list(job.providers))
    except Exception as exc:  # onnxruntime raises its own untyped errors
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"{path}: cannot expose intermediate tensors: {first}") from None


def _outputs(session: Any, feeds: Mapping[str, np.ndarray], with_feeds: bool) -> dict[str, Any]:
    names = [o.name for o in session.get_outputs()]
    out = dict(zip(names, session.run(names, dict(feeds)), strict=True))
    return {**feeds, **out} if with_feeds else out


def _fold(
    p: Plan,
    ref: Mapping[str, Any],
    cand: Mapping[str, Any],
    in_slice: np.ndarray,
    reach: np.ndarray,
    sums: Mapping[str, ErrorSums],
    unusable: set[str],
) -> None:
    rows = len(in_slice)
    for tensor in p.tensors:
        other = p.candidate_names[tensor.name]
        r, c = ref.get(tensor.name), cand.get(other)
        if tensor.name in unusable or not _comparable(r, c, rows):
            unusable.add(tensor.name)  # not per-row floats (a shape, a label): not compared
            continue
        assert r is not None and c is not None
        sums[tensor.name].add(r, c, in_slice)
        bounds = p.ranges.get(other)
        if bounds is not None and reach.any():
            sums[tensor.name].reach(r[reach], bounds)


def _comparable(r: Any, c: Any, rows: int) -> bool:
    return (
        isinstance(r, np.ndarray)
        and isinstance(c, np.ndarray)
        and r.dtype.kind == "f"
        and c.dtype.kind == "f"
        and r.shape == c.shape
        and r.ndim >= 1
        and r.shape[0] == rows
    )


def _result(
    job: LocalizeJob,
    p: Plan,
    kept: tuple[Tensor, ...],
    sums: Mapping[str, ErrorSums],
    done: int,
    planned: int,
    seconds: float,
) -> Localization:
    tol = job.tolerance
    growth = _growth(p, kept, sums, tol)
    has_slice = job.slice_key is not None and job.slice_rows is not None and len(job.slice_rows)
    errors = tuple(_tensor_error(t, sums[t.name], growth[t.name], bool(has_slice)) for t in kept)
    over = [e for e in errors if e.rel_err > tol or e.nan_or_inf > 0]
    ranges = _ranges(p, kept, sums)
    first = over[0].name if over else None
    culprit = max(over, key=lambda e: e.growth).name if over else None
    return Localization(
        first_divergent=first,
        largest_growth=culprit,
        tensors=errors,
        rows=done,
        seconds=seconds,
        tolerance=tol,
        slice=dict(job.slice_key) if has_slice and job.slice_key else None,
        ranges=ranges,
        remedies=remedies(p, over, ranges, culprit, job.slice_key),
        truncated=done < planned,
    )


def _tensor_error(t: Tensor, s: ErrorSums, growth: float, has_slice: bool) -> TensorError:
    return TensorError(
        name=t.name,
        op_type=t.op_type,
        node=t.node,
        max_abs=s.max_abs,
        rel_err=s.rel_err,
        sqnr_db=s.sqnr_db,
        cosine=s.cosine,
        slice_max_abs=s.slice_max_abs if has_slice else None,
        nan_or_inf=s.nonfinite,
        growth=growth,
    )


def _growth(
    p: Plan, kept: tuple[Tensor, ...], sums: Mapping[str, ErrorSums], tol: float
) -> dict[str, float]:
    """rel_err over the largest rel_err arriving through the inputs (floored at `tol`).

    Unmatched tensors pass on the largest error arriving at them; constants bring none.
    """
    measured = {t.name: sums[t.name].rel_err for t in kept}
    arriving: dict[str, float] = {}
    out: dict[str, float] = {}
    for name, inputs in ((t.name, t.inputs) for t in p.graph):  # topological order
        before = max((arriving.get(i, 0.0) for i in inputs), default=0.0)
        if name not in measured:
            arriving[name] = before
            continue
        arriving[name] = rel = measured[name]
        out[name] = 1.0 if math.isinf(before) else rel / max(before, tol)
    return out


def _ranges(
    p: Plan, kept: tuple[Tensor, ...], sums: Mapping[str, ErrorSums]
) -> tuple[ActivationRange, ...]:
    out = []
    for t in kept:
        bounds, s = p.ranges.get(p.candidate_names[t.name]), sums[t.name]
        if bounds is None or s.reached_count == 0:
            continue
        share = s.outside / s.reached_count
        out.append(ActivationRange(t.name, *bounds, s.reached_min, s.reached_max, share))
    return tuple(out)
