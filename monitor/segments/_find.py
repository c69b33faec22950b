"""`find_segments`: the weak segments of a frame with labels and predictions."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.errors import InputError
from monitor.segments._cells import Tested, build, lattice, pick
from monitor.segments._encode import encode
from monitor.segments._inputs import Options, features_of, require, too_few, usable
from monitor.segments._report import SegmentReport
from monitor.segments._stats import bh_qvalues, mean_tests, rate_tests

METRICS = ("error_rate", "accuracy", "absolute_error", "log_loss")
RATES = ("error_rate", "accuracy")
EPS = 1e-15


def row_losses(labels: Any, predictions: Any, metric: str, names: tuple[str, str]) -> NDArray[Any]:
    """Each row's loss (0/1 error, absolute error, log loss); non-finite input is an InputError."""
    if metric not in METRICS:
        raise InputError(f"metric '{metric}': use one of {', '.join(METRICS)}")
    y = np.asarray(labels)
    p = np.asarray(predictions)
    for values, name in ((y, names[0]), (p, names[1])):
        if values.dtype.kind in "iufb":
            if not np.isfinite(values.astype(np.float64)).all():
                raise InputError(f"column '{name}': missing or non-finite values")
        elif any(v is None or (isinstance(v, float) and not math.isfinite(v)) for v in values):
            raise InputError(f"column '{name}': missing or non-finite values")
    if metric in RATES:
        if y.dtype.kind in "iufb" and p.dtype.kind in "iufb":
            unequal: NDArray[np.bool_] = y.astype(np.float64) != p.astype(np.float64)
            return unequal.astype(np.float64)
        different: NDArray[np.bool_] = y.astype(str) != p.astype(str)
        return different.astype(np.float64)
    for values, name in ((y, names[0]), (p, names[1])):
        if values.dtype.kind not in "iufb":
            raise InputError(f"column '{name}': {metric} needs numeric values")
    yf, pf = y.astype(np.float64), p.astype(np.float64)
    if metric == "absolute_error":
        return np.abs(yf - pf)
    if not np.isin(yf, (0.0, 1.0)).all():
        raise InputError(f"column '{names[0]}': log_loss needs 0/1 labels")
    if ((pf < 0) | (pf > 1)).any():
        raise InputError(f"column '{names[1]}': log_loss needs probabilities in [0, 1]")
    pc = np.clip(pf, EPS, 1 - EPS)
    return -(yf * np.log(pc) + (1 - yf) * np.log(1 - pc))


def find_segments(
    frame: Any,
    label: str,
    prediction: str,
    features: Sequence[str] | None = None,
    metric: str = "error_rate",
    max_predicates: int = 3,
    min_support: int = 30,
    min_share: float = 0.01,
    top: int = 10,
    alpha: float = 0.05,
    score_alpha: float = 0.95,
    bins: int = 10,
    edges: Mapping[str, Sequence[float]] | None = None,
) -> SegmentReport:
    """Search conjunctions of up to `max_predicates` predicates for segments worse than the rest.

    Reported: the `top` segments by SliceLine score whose Benjamini–Hochberg q-value (over every
    slice evaluated) is below `alpha`. `edges` bins numeric features on a baseline's edges.
    """
    require(frame, (label, prediction, *(features or ())))
    opts = Options(max_predicates, min_support, min_share, top, alpha, score_alpha, bins)
    feats, skipped = usable([frame], features_of(frame, features, (label, prediction)))
    n = len(frame)
    sigma = opts.sigma(n)
    err = row_losses(
        frame[label].to_numpy(), frame[prediction].to_numpy(), metric, (label, prediction)
    )
    overall = _metric_value(float(err.mean()), metric) if n else None

    def empty(reason: str, insufficient: bool = True) -> SegmentReport:
        return SegmentReport(metric, n, overall, feats, sigma, max_predicates, alpha, 0, 0, 0,
                             [], reason, insufficient=insufficient, skipped=skipped)  # fmt: skip

    short = too_few(n, sigma, feats) or _single_class(frame[label], label)
    if short:
        return empty(short)
    if not err.any():
        return empty("no errors: every row's loss is 0", insufficient=False)
    enc = encode(frame, feats, bins=bins, edges=edges)
    cells = lattice(enc, err, sigma, score_alpha, max_predicates, top, metric not in RATES)
    count, errsum, total = cells.count, cells.errsum, float(err.sum())
    if metric in RATES:
        p, effect, half = rate_tests(count, errsum, n, total)
    else:
        p, effect, half = mean_tests(count, errsum, cells.sqsum, n, total, float((err * err).sum()))
    q = bh_qvalues(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        inside, outside = errsum / count, (total - errsum) / (n - count)
    tested = Tested(_metric_value(inside, metric), _metric_value(outside, metric), effect, half,
                    p, q)  # fmt: skip
    segments = build(cells, pick(q, cells.scores, effect, alpha, top), n, tested)
    reason = None if segments else f"no segment worse than the rest with q < {alpha}"
    return SegmentReport(metric, n, overall, feats, sigma, max_predicates, alpha, int(p.size),
                         cells.counted, cells.pruned, segments, reason,
                         skipped=skipped)  # fmt: skip


def _single_class(labels: Any, name: str) -> str | None:
    """Why one label value for every row cannot be searched, or None."""
    if labels.nunique() < 2:
        return f"a single class in '{name}': every label is the same"
    return None


def _metric_value(mean_loss: Any, metric: str) -> Any:
    return 1.0 - mean_loss if metric == "accuracy" else mean_loss
