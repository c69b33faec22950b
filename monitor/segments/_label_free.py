"""Segments without labels: by estimated error (CBPE per row) and by drift of their share.

Estimated: a calibration fitted on labelled reference data gives each current row the
probability that its prediction is wrong; that expected error is the row's loss. Drift: the
reference and current rows are searched together, the loss being "the row is current" (and,
for segments that shrank, "the row is reference"); a segment's test is Fisher's on its 2×2
table (in the segment or not × current or reference), the exact two-proportion test of a change
in its share. Both reports are flagged `estimated`; docs/concepts/segments.md says what their
p-values mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.errors import InputError
from monitor.estimation import Calibration
from monitor.segments._cells import Tested, build, lattice, pick
from monitor.segments._encode import encode, quantile_edges
from monitor.segments._inputs import Options, features_of, require, too_few, usable
from monitor.segments._report import Segment, SegmentReport
from monitor.segments._stats import Z95, bh_qvalues, mean_tests, rate_tests

Arr = NDArray[np.float64]


def expected_errors(scores: Any, calibration: Calibration, name: str = "score") -> Arr:
    """Each row's probability of a wrong prediction (predicted positive at the threshold)."""
    s = np.asarray(scores)
    if s.dtype.kind not in "iuf" or not np.isfinite(s.astype(np.float64)).all():
        raise InputError(f"column '{name}': scores must be finite numbers")
    s = s.astype(np.float64)
    positive = calibration.calibrate(s)
    return np.where(s >= calibration.threshold, 1.0 - positive, positive)


def find_estimated_segments(
    frame: Any,
    score: str,
    calibration: Calibration,
    features: Sequence[str] | None = None,
    options: Options | None = None,
    edges: Mapping[str, Sequence[float]] | None = None,
) -> SegmentReport:
    """Segments whose expected error rate (CBPE: calibrated scores, no labels) is above the rest's.

    p-values: the one-sided Welch test of the rows' expected errors, segment against complement
    (is the segment's estimate above the rest's by more than which rows it holds explains?).
    CI: where the realized difference falls, 95%, if the calibration holds within the segment
    (the rows' errors as independent Bernoulli draws with those probabilities).
    """
    opts = options or Options()
    require(frame, (score, *(features or ())))
    feats, skipped = usable([frame], features_of(frame, features, (score,)))
    n = len(frame)
    sigma = opts.sigma(n)
    err = expected_errors(frame[score].to_numpy(), calibration, score)
    overall = float(err.mean()) if n else None

    def empty(reason: str, insufficient: bool = True) -> SegmentReport:
        return SegmentReport("error_rate", n, overall, feats, sigma, opts.max_predicates,
                             opts.alpha, 0, 0, 0, [], reason, "estimated", True, insufficient,
                             skipped)  # fmt: skip

    short = too_few(n, sigma, feats)
    if short:
        return empty(short)
    if not err.any():
        return empty("no expected errors: every calibrated probability is 0 or 1", False)
    enc = encode(frame, feats, bins=opts.bins, edges=edges)
    cells = lattice(enc, err, sigma, opts.weight("estimated"), opts.max_predicates, opts.top, True)
    count, errsum, sqsum = cells.count, cells.errsum, cells.sqsum
    total, total_sq = float(err.sum()), float((err * err).sum())
    p, effect, _ = mean_tests(count, errsum, sqsum, n, total, total_sq)
    q = bh_qvalues(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        # the variance of a sum of Bernoulli(e) is the sum of e(1 - e) = sum e - sum e²
        var_in = (errsum - sqsum) / count**2
        var_out = ((total - total_sq) - (errsum - sqsum)) / (n - count) ** 2
        half = Z95 * np.sqrt(np.maximum(var_in + var_out, 0.0))
        tested = Tested(errsum / count, (total - errsum) / (n - count), effect, half, p, q)
    segments = build(cells, pick(q, cells.scores, effect, opts.alpha, opts.top), n, tested)
    reason = (
        None if segments else f"no segment's estimated error above the rest with q < {opts.alpha}"
    )
    return SegmentReport("error_rate", n, overall, feats, sigma, opts.max_predicates, opts.alpha,
                         int(p.size), cells.counted, cells.pruned, segments, reason, "estimated",
                         True, False, skipped)  # fmt: skip


def reference_edges(reference: Any, features: Sequence[str], bins: int) -> dict[str, list[float]]:
    """Quantile edges of the reference's numeric features (so both windows share bins)."""
    out = {}
    for col in features:
        series = reference[col]
        if series.dtype.kind in "iuf" and not (
            series.dtype.kind in "iu" and series.nunique() <= bins
        ):
            values = series.to_numpy(dtype=np.float64, na_value=np.nan)
            out[col] = quantile_edges(values, bins).tolist()
    return out


def find_drift_segments(
    reference: Any,
    current: Any,
    features: Sequence[str] | None = None,
    options: Options | None = None,
    edges: Mapping[str, Sequence[float]] | None = None,
) -> SegmentReport:
    """Segments whose share of the rows changed between `reference` and `current`.

    Both directions are searched (grew, shrank); Benjamini–Hochberg runs over both families
    together. Reported `value` is the segment's current share, `rest_value` its reference
    share, `effect` the change with a Wald 95% interval. Numeric features are binned on the
    reference's quantile edges unless `edges` are given.
    """
    opts = options or Options()
    feats = features_of(current, features, ())
    require(current, feats, "current: ")
    require(reference, feats, "reference: ")
    frame = _concat(reference, current, feats)
    feats, skipped = usable([frame], feats)
    n_ref, n_cur = len(reference), len(current)
    n = n_ref + n_cur
    sigma = opts.sigma(n)

    def report(segments: list[Segment], reason: str | None, tested: int = 0, counted: int = 0,
               pruned: int = 0, insufficient: bool = False) -> SegmentReport:  # fmt: skip
        return SegmentReport("share", n, None, feats, sigma, opts.max_predicates, opts.alpha,
                             tested, counted, pruned, segments, reason, "drift", True,
                             insufficient, skipped)  # fmt: skip

    # each window needs a segment's worth of rows, or no share of either could be measured
    which, fewest = ("reference", n_ref) if n_ref <= n_cur else ("current", n_cur)
    short = too_few(n, sigma, feats) or (
        f"{which}: {fewest} rows, fewer than the minimum support ({sigma})"
        if fewest < sigma else None
    )  # fmt: skip
    if short:
        return report([], short, insufficient=True)
    cut = edges if edges is not None else reference_edges(reference, feats, opts.bins)
    enc = encode(frame, feats, bins=opts.bins, edges=cut)
    is_current = np.r_[np.zeros(n_ref), np.ones(n_cur)]
    weight = opts.weight("drift")
    grew = lattice(enc, is_current, sigma, weight, opts.max_predicates, opts.top, False)
    shrank = lattice(enc, 1.0 - is_current, sigma, weight, opts.max_predicates, opts.top, False)
    p_up, _, _ = rate_tests(grew.count, grew.errsum, n, n_cur)
    p_down, _, _ = rate_tests(shrank.count, shrank.errsum, n, n_ref)
    q = bh_qvalues(np.r_[p_up, p_down])
    found: list[Segment] = []
    sides = [(grew, p_up, q[: p_up.size], grew.errsum),
             (shrank, p_down, q[p_up.size :], shrank.count - shrank.errsum)]  # fmt: skip
    for cells, p, q_part, cur in sides:
        a, b = cur / n_cur, (cells.count - cur) / n_ref
        half = Z95 * np.sqrt(a * (1 - a) / n_cur + b * (1 - b) / n_ref)
        moved = a - b if cells is grew else b - a  # > 0: in the direction this search looks
        keep = pick(q_part, cells.scores, moved, opts.alpha, opts.top)
        found += build(cells, keep, n, Tested(a, b, a - b, half, p, q_part))
    found = sorted(found, key=lambda s: -s.score)[: opts.top]
    reason = None if found else f"no segment whose share moved with q < {opts.alpha}"
    return report(found, reason, int(q.size), grew.counted + shrank.counted,
                  grew.pruned + shrank.pruned)  # fmt: skip


def _concat(reference: Any, current: Any, features: Sequence[str]) -> Any:
    import pandas as pd

    return pd.concat([reference[list(features)], current[list(features)]], ignore_index=True)
