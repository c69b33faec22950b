"""Outcome metrics, intervals and verdicts computed from mergeable summaries, not raw rows.

Values equal `evaluate_outcomes` on the same pairs: exactly for counts-based metrics (accuracy,
precision, recall, f1; multiclass accuracy and macro precision, recall, f1 from the confusion
matrix, intervals by a multinomial bootstrap of its cells), up to float rounding for log loss,
ECE, MAE, RMSE and MAPE, and within `roc_auc_error` for ROC-AUC. Proportions get the same Wilson
intervals as the raw path; the other classification metrics a bootstrap that resamples the
summary's cells (a multinomial draw, the row bootstrap of binned scores; ECE's interval takes it
with null draws of its bins, as `_ece` says); regression metrics a normal interval from the
stored moments.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from monitor.errors import InputError
from monitor.outcomes._base import DEFAULT_METRICS, Metric, OutcomeResult, Task, get_metric
from monitor.outcomes._ece import bin_bias, ece_estimate, noise_bound, null_noise
from monitor.outcomes._evaluate import MIN_SUPPORT
from monitor.outcomes._family import FAMILY_ALPHA, Correction, decide, status_of
from monitor.outcomes._intervals import BOOTSTRAP_DRAWS, Z95, percentile_ends, wilson
from monitor.outcomes._multiclass import MulticlassSummary, confusion_metrics
from monitor.outcomes._score_bins import BINS, ECE_BINS
from monitor.outcomes.summary import (
    ClassificationSummary,
    OutcomeSummary,
    RegressionSummary,
)

Slice = dict[str, str] | None


def roc_auc_error(summary: ClassificationSummary) -> float:
    """Bound on |ROC-AUC from the summary - exact ROC-AUC|: tied-in-bin pairs count half."""
    pos, neg = summary.count[1], summary.count[0]
    pairs = float(pos.sum()) * float(neg.sum())
    return 0.0 if pairs == 0 else 0.5 * float((pos * neg).sum()) / pairs


def binned_roc_auc(summary: ClassificationSummary) -> float:
    """ROC-AUC of a summary's score bins (scores in one bin tied: within `roc_auc_error`);
    0.5 without positives or without negatives, as `metrics.roc_auc`."""
    flat = summary.count.reshape(-1)
    cells = np.flatnonzero(flat)
    if cells.size == 0:
        return 0.5
    count = flat[cells].astype(np.float64)
    zero = np.zeros_like(count)
    return float(_cell_metrics(_Cells.of([cells]), count, zero)["roc_auc"][0])


def evaluate_summaries(
    summaries: Sequence[tuple[Slice, OutcomeSummary]],
    task: Task = "classification",
    metrics: Sequence[str] | None = None,
    baseline: Mapping[str, float] | None = None,
    tolerance: Mapping[str, float] | float = 0.0,
    min_support: int = MIN_SUPPORT,
    correction: Correction = "family",
) -> list[OutcomeResult]:
    """Each metric of each (slice, summary), in the given order, like `evaluate_outcomes`
    (``correction`` as there: the summaries are one evaluation)."""
    chosen = [get_metric(n) for n in metrics or DEFAULT_METRICS[task]]
    for metric in chosen:
        if not metric.accepts(task):
            raise InputError(f"metric '{metric.name}' is for {metric.task}, not {task}")
    chosen = [metric.for_task(task) for metric in chosen]
    out = []
    found = _values_all(summaries, min_support)
    for (slice_, summary), values in zip(summaries, found, strict=True):
        supports = _supports(summary)
        for metric in chosen:
            base = (baseline or {}).get(metric.name)
            tol = tolerance if isinstance(tolerance, float | int) else tolerance.get(metric.name)
            out.append(_one(metric, supports[metric.support], values, slice_, (base, tol),
                            min_support))  # fmt: skip
    return decide(out, correction)


def _one(
    metric: Metric,
    n: int,
    values: dict[str, tuple[float, float, float]],
    slice_: Slice,
    verdict: tuple[float | None, float | None],
    min_support: int,
) -> OutcomeResult:
    """One metric's result from its support `n` and the summary's values; `verdict`: its
    baseline value and tolerance."""
    base, tol = verdict
    found = values.get(metric.name)
    if n < min_support or found is None:
        return OutcomeResult(
            metric.name, slice_, None, None, None, base, tol, n, "insufficient_data"
        )
    value, lo, hi = found
    if metric.proportion:
        lo, hi = wilson(value * n, n)
    status = status_of(metric, value, lo, hi, base, tol or 0.0)
    level = None if base is None else FAMILY_ALPHA
    return OutcomeResult(metric.name, slice_, value, lo, hi, base, tol, n, status, level)


def _supports(summary: OutcomeSummary) -> dict[str, int]:
    """A summary's support per `Metric.support` kind, found once per summary rather than once
    per metric (regression and multiclass: every kind is its n)."""
    n = summary.n
    if isinstance(summary, RegressionSummary | MulticlassSummary):
        return dict.fromkeys(("rows", "predicted_positive", "actual_positive"), n)
    tp, fp, _tn, fn = summary.confusion.tolist()
    return {"rows": n, "predicted_positive": int(tp + fp), "actual_positive": int(tp + fn)}


def _values_all(
    summaries: Sequence[tuple[Slice, OutcomeSummary]], min_support: int
) -> list[dict[str, tuple[float, float, float]]]:
    """(value, ci_low, ci_high) of every metric each summary can give, in order; the binary
    classification summaries all at once (`_classification`). A summary of fewer than
    `min_support` pairs gets none: each of its metrics' support is at most its n, so every one
    is `insufficient_data` whatever its value, and its bootstrap is not drawn."""
    used = max(min_support, 1)
    binary = [s for _, s in summaries if isinstance(s, ClassificationSummary) and s.n >= used]
    found = iter(_classification(binary) if binary else [])
    out: list[dict[str, tuple[float, float, float]]] = []
    for _, summary in summaries:
        if summary.n < used:
            out.append({})
        elif isinstance(summary, RegressionSummary):
            out.append(_regression(summary))
        elif isinstance(summary, MulticlassSummary):
            out.append(_multiclass(summary))
        else:
            out.append(next(found))
    return out


def _multiclass(s: MulticlassSummary) -> dict[str, tuple[float, float, float]]:
    """Exact counts metrics; intervals from a multinomial bootstrap of the matrix's cells."""
    if s.n == 0:
        return {}
    _classes, matrix = s.matrix()
    m = matrix.astype(np.float64)
    rng = np.random.default_rng(s.n)
    draws = rng.multinomial(s.n, m.reshape(-1) / s.n, size=BOOTSTRAP_DRAWS)
    boot = confusion_metrics(draws.reshape(BOOTSTRAP_DRAWS, *m.shape).astype(np.float64))
    return _with_intervals({k: float(v) for k, v in confusion_metrics(m).items()}, boot)


def _with_intervals(
    point: dict[str, float], boot: dict[str, np.ndarray]
) -> dict[str, tuple[float, float, float]]:
    """(value, percentile interval of the draws: `percentile_ends`) per metric, in one call."""
    names = list(point)
    lo, hi = percentile_ends(np.stack([boot[n] for n in names]), axis=1)
    return {n: (point[n], float(a), float(b)) for n, a, b in zip(names, lo, hi, strict=True)}


def _classification(
    summaries: Sequence[ClassificationSummary],
) -> list[dict[str, tuple[float, float, float]]]:
    """Metrics and bootstrap intervals of non-empty summaries (a window's slices), computed
    together: every summary's occupied cells are laid end to end (`_Cells`), so each step is one
    array operation over (draw, cell) for all of them, and the work follows the cells the
    summaries occupy (a window's slices together hold about twice the overall's), not summaries
    times the union of their cells. Each summary's draws come from its own generator seeded by
    its n, as when it is evaluated alone."""
    own = [np.flatnonzero(s.count.reshape(-1)) for s in summaries]
    layout = _Cells.of(own)
    flat = [np.concatenate([getattr(s, a).reshape(-1)[c] for s, c in zip(summaries, own,
                                                                         strict=True)])
            .astype(np.float64) for a in ("count", "score_sum", "loss_sum")]  # fmt: skip
    conf = np.stack([s.confusion for s in summaries]).astype(np.float64)
    boot_conf, weights = _draws(summaries, own, flat[0], conf)
    count, loss = flat[0], flat[2]
    point = _confusion_metrics(conf) | _cell_metrics(layout, count, loss)
    boot = _confusion_metrics(boot_conf) | _cell_metrics(layout, weights * count, weights * loss)
    names = list(point)
    lo, hi = percentile_ends(np.stack([boot[n] for n in names]), axis=1)
    ece = np.stack(_ece(layout, flat, weights))
    out = []
    for j, s in enumerate(summaries):
        has_auc = 0 < s.count[1].sum() < s.n
        found = {
            n: (float(point[n][j]), float(lo[i, j]), float(hi[i, j]))
            for i, n in enumerate(names) if n != "roc_auc" or has_auc
        }  # fmt: skip
        found["ece"] = (float(ece[0, j]), float(ece[1, j]), float(ece[2, j]))
        out.append(found)
    return out


def _draws(
    summaries: Sequence[ClassificationSummary],
    own: Sequence[np.ndarray],
    count: np.ndarray,
    conf: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap draws per summary: its confusion counts (draw, summary, 4), and the weight of
    each of its cells (draw, cell, laid out as `_Cells`): a multinomial resample of its pairs
    over its occupied cells divided by the cells' counts (the row bootstrap of binned scores).

    A summary's cell resample is drawn as `_PICKS` says: where it has few pairs per occupied
    cell (continuous scores: about one), as n uniform picks among its pairs, counted per cell
    by one `bincount` for all of them, instead of one binomial per cell and draw. Both are the
    same multinomial distribution; only the generator's stream differs."""
    boot_conf = np.empty((BOOTSTRAP_DRAWS, len(summaries), 4))
    weights = np.empty((BOOTSTRAP_DRAWS, count.size))
    picked: list[np.ndarray] = []
    by_picks = np.zeros(count.size, dtype=bool)
    at = 0
    for j, (s, mine) in enumerate(zip(summaries, own, strict=True)):
        rng = np.random.default_rng(s.n)
        boot_conf[:, j] = rng.multinomial(s.n, conf[j] / conf[j].sum(), size=BOOTSTRAP_DRAWS)
        counts = count[at : at + mine.size]
        if s.n <= _PICKS * mine.size:
            pairs = np.repeat(np.arange(at, at + mine.size), counts.astype(np.intp))
            picked.append(pairs[rng.integers(0, pairs.size, size=(BOOTSTRAP_DRAWS, s.n))])
            by_picks[at : at + mine.size] = True
        else:
            draws = rng.multinomial(s.n, counts / counts.sum(), size=BOOTSTRAP_DRAWS)
            weights[:, at : at + mine.size] = draws / counts
        at += mine.size
    if picked:
        cells = np.concatenate(picked, axis=1)
        cells += (np.arange(BOOTSTRAP_DRAWS) * count.size)[:, None]
        drawn = np.bincount(cells.reshape(-1), minlength=BOOTSTRAP_DRAWS * count.size)
        drawn = drawn.reshape(BOOTSTRAP_DRAWS, count.size)
        weights[:, by_picks] = drawn[:, by_picks] / count[by_picks]
    return boot_conf, weights


_PICKS = 4
"""Picks instead of a multinomial where a summary has at most this many pairs per occupied
cell: n picks cost a few ns each, a binomial per cell ~50 ns (a window's slices: ~1 pair per
cell; a day's overall summary: ~5, drawn by cell)."""


def _confusion_metrics(c: np.ndarray) -> dict[str, np.ndarray]:
    """Counts metrics over c's last axis = [tp, fp, tn, fn] (0 where undefined, like
    metrics.py)."""
    tp, fp, tn, fn = np.moveaxis(c, -1, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "accuracy": (tp + tn) / c.sum(axis=-1),
            "precision": np.where(tp + fp > 0, tp / (tp + fp), 0.0),
            "recall": np.where(tp + fn > 0, tp / (tp + fn), 0.0),
            "f1": np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0),
        }


@dataclass(frozen=True)
class _Cells:
    """Summaries' occupied cells (class * BINS + bin, ascending per summary) laid end to end,
    summary j's from `starts[j]`, with the index arithmetic of `_cell_metrics`, computed once
    for the point values and every draw. Every summary has at least one cell (n > 0)."""

    starts: np.ndarray  # flat start of each summary's cells
    pos: np.ndarray  # per cell: of the positive class
    first_neg: np.ndarray  # per positive cell: its summary's first negative cell (negatives only)
    at: np.ndarray  # per positive cell: its summary's first negative cell of a bin >= its own
    tied: np.ndarray  # per positive cell: whether the negative cell at `at` has its bin
    ece_order: np.ndarray  # cells ordered by (summary, calibration bin)
    ece_runs: np.ndarray  # starts of the (summary, calibration bin) runs in that order
    ece_summaries: np.ndarray  # each summary's first run
    ece_keys: np.ndarray  # each run's summary * ECE_BINS + calibration bin

    @classmethod
    def of(cls, own: Sequence[np.ndarray]) -> _Cells:
        sizes = np.array([c.size for c in own])
        cells = np.concatenate(own)
        summary = np.repeat(np.arange(len(own)), sizes)
        pos = cells >= BINS
        # Negative cells keyed by (summary, bin) ascending; a positive cell's query is its own.
        neg_keys = summary[~pos] * 2 * BINS + cells[~pos]
        query = summary[pos] * 2 * BINS + (cells[pos] - BINS)
        at = np.searchsorted(neg_keys, query)
        tied = at < neg_keys.size
        tied[tied] = neg_keys[at[tied]] == query[tied]
        first_neg = np.searchsorted(neg_keys, summary[pos] * 2 * BINS)
        group = summary * ECE_BINS + (cells % BINS) // (BINS // ECE_BINS)
        order = np.argsort(group, kind="stable")
        ordered = group[order]
        runs = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        first_runs = np.searchsorted(ordered[runs] // ECE_BINS, np.arange(len(own)))
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        return cls(starts, pos, first_neg, at, tied, order, runs, first_runs, ordered[runs])


def _cell_metrics(cells: _Cells, count: np.ndarray, loss: np.ndarray) -> dict[str, np.ndarray]:
    """ROC-AUC and log loss of each summary, over the last axis of per-cell (count, loss sum)
    laid out as `cells`; the leading axes (draws) are kept."""
    add = functools.partial(np.add.reduceat, axis=-1)
    n = add(count, cells.starts)
    neg, pos = count[..., ~cells.pos], count[..., cells.pos]
    zero = np.zeros((*count.shape[:-1], 1))
    below = np.concatenate([zero, np.cumsum(neg, axis=-1)], axis=-1)
    tied = np.zeros_like(pos)
    tied[..., cells.tied] = neg[..., cells.at[cells.tied]]
    under = below[..., cells.at] - below[..., cells.first_neg] + 0.5 * tied
    wins = np.zeros_like(count)
    wins[..., cells.pos] = pos * under
    positives = add(np.where(cells.pos, count, 0.0), cells.starts)
    pairs = positives * (n - positives)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = np.where(pairs > 0, add(wins, cells.starts) / pairs, 0.5)
    return {"roc_auc": auc, "log_loss": add(loss, cells.starts) / n}


def _ece(
    cells: _Cells, flat: Sequence[np.ndarray], weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, ci_low, ci_high) of each summary's ECE (`_ece`'s estimate and interval) from its
    per (summary, calibration bin) run sums, as `_ece.ece_bins` of the rows: the bias from
    them, the noise from the bootstrap's (cell `weights` per draw) and from null draws."""
    add = functools.partial(np.add.reduceat, axis=-1)
    order, runs, first = cells.ece_order, cells.ece_runs, cells.ece_summaries
    count, score = flat[0][order], flat[1][order]
    gap_cells = np.where(cells.pos[order], count, 0.0) - score  # labels - scores per cell
    conf, gap = add(score, runs), add(gap_cells, runs)
    count = add(count, runs)
    n = add(count, first)
    boot = noise_bound(add(np.abs(add(weights[:, order] * gap_cells, runs) - gap), first) / n)
    dense = np.zeros((3, n.size * ECE_BINS))
    dense[:, cells.ece_keys] = count, conf, gap
    null = [noise_bound(null_noise(*bins)) for bins in dense.reshape(3, n.size, ECE_BINS)
            .transpose(1, 0, 2)]  # fmt: skip
    plugin = add(np.abs(gap), first) / n
    bias = add(bin_bias(count, conf, gap), first) / n
    return ece_estimate(plugin, bias, np.maximum(boot, np.array(null)))


def _regression(s: RegressionSummary) -> dict[str, tuple[float, float, float]]:
    if s.n <= 0:
        return {}
    n, sums = s.n, s.sums
    mae = sums["abs"] / n
    mse = sums["sq"] / n
    rmse = math.sqrt(mse)
    se_mae = math.sqrt(max(mse - mae * mae, 0.0) / n)
    se_mse = math.sqrt(max(sums["e4"] / n - mse * mse, 0.0) / n)
    se_rmse = se_mse / (2 * rmse) if rmse > 0 else 0.0
    out = {"mae": _normal(mae, se_mae), "rmse": _normal(rmse, se_rmse)}
    if s.nonzero_y:
        k = s.nonzero_y
        mape = sums["ape"] / k
        out["mape"] = _normal(mape, math.sqrt(max(sums["ape2"] / k - mape * mape, 0.0) / k))
    else:
        out["mape"] = (0.0, 0.0, 0.0)
    return out


def _normal(value: float, se: float) -> tuple[float, float, float]:
    # Moments of huge errors overflow; the interval is then unbounded, not NaN.
    if not math.isfinite(se) or not math.isfinite(value + Z95 * se):
        return value, 0.0, sys.float_info.max
    return value, max(0.0, value - Z95 * se), value + Z95 * se
