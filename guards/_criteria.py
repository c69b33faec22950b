"""Criteria: policy thresholds applied to the comparison evidence, overall and per slice.

A criterion passes when its value is within its threshold. On fewer than `min_slice_rows`
rows (a slice, or the whole golden set) a statistical criterion is `inconclusive`, unless the
evidence alone shows the breach: the lower end of the two-sided exact (Clopper-Pearson)
interval at `confidence` of the flip rate lies above the threshold (for accuracy, a paired
lower bound of the drop; ROC-AUC and regression errors on small slices stay inconclusive). A
slice where the two models agree exactly (no flip, identical task outputs) passes whatever its
size: no floating-point bound decides a criterion the evidence settles, so a zero limit holds
for a count of zero. Such a pass says the models agreed on these rows, not that the rate is
within its limit: on n rows, no flip bounds the rate by ~3/n at 95% (the rule of three).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from guards._compare import Elementwise
from guards._stats import exact_interval
from guards._tasks import HIGHER_IS_BETTER, Task, metric_drop
from guards.policy import GatePolicy
from guards.results import Criterion, Status


@dataclass(frozen=True)
class Slice:
    """Rows sharing one value of one slice column (key None: the whole golden set)."""

    key: Mapping[str, str] | None
    rows: np.ndarray


@dataclass(frozen=True)
class Evidence:
    """Everything the criteria look at."""

    elementwise: Mapping[str, Elementwise]
    task: Task | None
    labels: np.ndarray | None
    slices: Sequence[Slice]
    # Class outputs besides `task` (a label beside its probabilities, other heads): flips only.
    extra: Sequence[Task] = ()


def evaluate(policy: GatePolicy, evidence: Evidence) -> tuple[Criterion, ...]:
    """All criteria the policy switches on."""
    return (*_elementwise(policy, evidence), *_task(policy, evidence))


def _elementwise(policy: GatePolicy, evidence: Evidence) -> Iterator[Criterion]:
    for name, cmp in evidence.elementwise.items():
        rows = len(cmp.row_max_abs)
        if policy.atol is not None:
            value, limit = cmp.mismatch_fraction, policy.max_mismatch_fraction
            yield Criterion(f"allclose[{name}]", value, limit, _plain(value, limit), rows=rows)
        if policy.max_abs is not None:
            value = cmp.stats.max_abs if cmp.stats.nan_or_inf == 0 else math.inf
            limit = policy.max_abs
            yield Criterion(f"max_abs[{name}]", value, limit, _plain(value, limit), rows=rows)


def _task(policy: GatePolicy, evidence: Evidence) -> Iterator[Criterion]:
    task = evidence.task
    if task is None:
        return
    flips, overlap = task.flips(), task.topk_overlap(policy.top_k)
    for sl in evidence.slices:
        whole = sl.key is None
        rate_limit = policy.max_flip_rate if whole else policy.max_slice_flip_rate
        if flips is not None and rate_limit is not None:
            yield _flip_rate(f"flip_rate[{task.output}]", flips[sl.rows], rate_limit, policy, sl)
        for other in evidence.extra:
            more = other.flips()
            if more is not None and rate_limit is not None:
                name = f"flip_rate[{other.output}]"
                yield _flip_rate(name, more[sl.rows], rate_limit, policy, sl)
        if overlap is not None and policy.min_topk_overlap is not None:
            yield _overlap(task.output, overlap[sl.rows], policy, sl)
        drop_limit = policy.max_metric_drop if whole else policy.max_slice_metric_drop
        if evidence.labels is not None and drop_limit is not None:
            for metric in task.metrics:
                yield _metric(task, metric, evidence.labels, drop_limit, policy, sl)


def _plain(value: float, limit: float) -> Status:
    return "pass" if value <= limit else "fail"


def _flip_rate(
    name: str, flips: np.ndarray, limit: float, policy: GatePolicy, sl: Slice
) -> Criterion:
    n, k = len(flips), int(np.count_nonzero(flips))
    value = k / n if n else math.nan
    if n >= policy.min_slice_rows or k == 0:
        status = _plain(value, limit) if n else "inconclusive"
    else:
        low, _ = exact_interval(k, n, policy.confidence)
        status = "fail" if low > limit else "inconclusive"
    return Criterion(name, value, limit, status, sl.key, n)


def _overlap(output: str, overlap: np.ndarray, policy: GatePolicy, sl: Slice) -> Criterion:
    assert policy.min_topk_overlap is not None
    n = len(overlap)
    value = float(overlap.mean()) if n else math.nan
    limit = policy.min_topk_overlap
    status: Status = "pass" if value >= limit else "fail"
    if n < policy.min_slice_rows and not (n and bool(np.all(overlap == 1.0))):
        status = "inconclusive"
    return Criterion(f"topk_overlap[{output}]", value, limit, status, sl.key, n)


def _metric(
    task: Task, metric: str, labels: np.ndarray, limit: float, policy: GatePolicy, sl: Slice
) -> Criterion:
    drop = metric_drop(task, metric, labels, sl.rows, policy.confidence)
    n = len(sl.rows)
    name = f"metric_drop:{metric}[{task.output}]"
    # higher-is-better metrics drop in percentage points, error metrics rise in percent
    unit = "points" if HIGHER_IS_BETTER[metric] else "%"
    if _agree(task, sl.rows):  # exact: no change can be a drop, even of an undefined metric
        status: Status = "pass"
    elif math.isnan(drop.drop):
        status = "inconclusive"
    elif n >= policy.min_slice_rows:
        status = _plain(drop.drop, limit)
    else:
        breach = drop.drop_lower_bound is not None and drop.drop_lower_bound > limit
        status = "fail" if breach else "inconclusive"
    value = 0.0 if status == "pass" and _agree(task, sl.rows) else drop.drop
    return Criterion(
        name, value, limit, status, sl.key, n,
        reference=drop.reference, candidate=drop.candidate, unit=unit,
    )  # fmt: skip


def _agree(task: Task, rows: np.ndarray) -> bool:
    """Both models gave identical outputs on every row: the drop is exactly 0."""
    return len(rows) > 0 and bool(np.array_equal(task.reference[rows], task.candidate[rows]))
