"""Attribution drift: how much each feature drives the model now, against the baseline.

A baseline carries reference attributions (columns `attr.<feature>` of the reference file, or
of a separate file), stored as each feature's count and sum of |attribution|. Windows sum the
`attributions` of their events (`monitor.profiles.serving`). Two methods, stored as drift
results like any other (Vertex AI's attribution drift):

- `attribution_mean_abs`, per feature: relative change of the mean absolute attribution,
  `|current - reference| / reference`; default threshold 0.3. A feature with zero reference
  attribution that gains some has value +inf reported as the threshold's 10x (finite).
- `attribution_rank`, column `attributions`: `1 - Spearman's rho` between the features'
  reference and current mean-|attribution| rankings (ties averaged); 0 is the same order,
  2 the reverse; default threshold 0.3. Needs at least 2 common features.

Fewer than `min_n` events with attributions on either side: `insufficient_data`.

Per slice: windows keep attribution sums per configured slice (`window_serving` rows), and
each slice is compared like the whole window, with `min_n` per slice, as drift results with
the slice set. The reference of a slice is the baseline's sums of that slice when the baseline
has them (`attr.*` and the slice columns in one reference file), else its overall sums.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from monitor.detectors import DriftResult
from monitor.profiles import OVERALL, parse_slice_key, slice_key
from monitor.profiles.serving import ServingSummary

PREFIX = "attr."
MEAN_ABS = "attribution_mean_abs"
RANK = "attribution_rank"
MEAN_ABS_THRESHOLD = 0.3
RANK_THRESHOLD = 0.3

Sums = dict[str, tuple[int, float]]
ReferenceSums = Mapping[str, tuple[int, float]]  # read-only Sums


def attribution_columns(columns: Iterable[str]) -> list[str]:
    """The `attr.<feature>` columns among `columns`."""
    return [c for c in columns if c.startswith(PREFIX) and len(c) > len(PREFIX)]


def reference_attributions(frames: Iterable[Any]) -> Sums:
    """Count and sum of |attribution| per feature over DataFrames of `attr.*` columns."""
    out: Sums = {}
    for frame in frames:
        for column in attribution_columns(frame.columns):
            values = np.abs(frame[column].to_numpy(dtype=np.float64, na_value=np.nan))
            values = values[np.isfinite(values)]
            n, total = out.get(column[len(PREFIX) :], (0, 0.0))
            out[column[len(PREFIX) :]] = (n + int(values.size), total + float(values.sum()))
    return out


def reference_sums(
    frames: Iterable[Any], slice_by: Sequence[str], keep: Collection[str]
) -> tuple[Sums, dict[str, Sums]]:
    """Overall and per-slice (keys in `keep`, one column's value each, as profiles slice)
    count and sum of |attribution| per feature, in one pass over DataFrames of `attr.*` and
    `slice_by` columns."""
    overall: Sums = {}
    by_slice: dict[str, Sums] = {}
    for frame in frames:
        overall = _add(overall, reference_attributions([frame]))
        for column in (c for c in slice_by if c in frame.columns):
            for value, group in frame.groupby(column, dropna=False, sort=False):
                key = slice_key(column, value)
                if key in keep:
                    by_slice[key] = _add(by_slice.get(key, {}), reference_attributions([group]))
    return overall, by_slice


def _add(a: Sums, b: Sums) -> Sums:
    return {f: (a.get(f, (0, 0.0))[0] + b.get(f, (0, 0.0))[0],
                a.get(f, (0, 0.0))[1] + b.get(f, (0, 0.0))[1]) for f in {*a, *b}}  # fmt: skip


def sums_from_settings(doc: Mapping[str, Any] | None) -> Sums:
    """Stored reference attributions (`{feature: [n, sum]}`) as Sums."""
    return {f: (int(n), float(t)) for f, (n, t) in (doc or {}).items()}


def attribution_drift(
    reference: ReferenceSums, current: ServingSummary, min_n: int, key: str = OVERALL
) -> list[DriftResult]:
    """Per-feature mean-|attribution| change and the ranking change (see module doc) of the
    whole window, or of slice `key`."""
    if not reference:
        return []
    where = parse_slice_key(key)
    out = [_mean_abs(f, ref, current.attributions.get(f, (0, 0.0)), min_n, where)
           for f, ref in sorted(reference.items())]  # fmt: skip
    out.append(_rank(reference, current.attributions, min_n, where))
    return out


def sliced_attribution_drift(
    reference: ReferenceSums,
    by_slice: Mapping[str, ReferenceSums],
    current: Mapping[str, ServingSummary],
    min_n: int,
) -> list[DriftResult]:
    """Attribution drift of the whole window and each slice in `current` (slice key ->
    summary); a slice's reference is `by_slice[key]` when the baseline has it, else overall."""
    return [
        r
        for key, summary in sorted(current.items())
        for r in attribution_drift(by_slice.get(key) or reference, summary, min_n, key)
    ]


Where = dict[str, str] | None


@dataclass(frozen=True)
class AttributionReference:
    """A baseline's reference attributions: overall, and per slice key where it has them."""

    overall: ReferenceSums = field(default_factory=dict)
    by_slice: Mapping[str, ReferenceSums] = field(default_factory=dict)

    def drift(self, current: Mapping[str, ServingSummary], min_n: int) -> list[DriftResult]:
        """Attribution drift of a window's slices (slice key -> summary; see module doc)."""
        return sliced_attribution_drift(self.overall, self.by_slice, current, min_n)


def _result(column: str, method: str, value: float | None, threshold: float,
            n: tuple[int, int], enough: bool, where: Where) -> DriftResult:  # fmt: skip
    if not enough or value is None:
        status = "insufficient_data"
        value = None
    else:
        status = "drift" if value > threshold else "ok"
    return DriftResult(column, where, "numeric", method, value, threshold, None, n[0], n[1],
                       status)  # type: ignore[arg-type]  # fmt: skip


def _mean_abs(feature: str, ref: tuple[int, float], cur: tuple[int, float], min_n: int,
              where: Where) -> DriftResult:  # fmt: skip
    (n0, t0), (n1, t1) = ref, cur
    enough = min(n0, n1) >= min_n
    value = None
    if enough:
        r, c = t0 / n0, t1 / n1
        value = abs(c - r) / r if r > 0 else (0.0 if c == 0 else 10 * MEAN_ABS_THRESHOLD)
    return _result(feature, MEAN_ABS, value, MEAN_ABS_THRESHOLD, (n0, n1), enough, where)


def _rank(reference: ReferenceSums, current: Mapping[str, tuple[int, float]], min_n: int,
          where: Where) -> DriftResult:  # fmt: skip
    common = sorted(f for f in reference if f in current and current[f][0] and reference[f][0])
    n0 = min((reference[f][0] for f in reference), default=0)
    n1 = min((current[f][0] for f in common), default=0)
    enough = len(common) >= 2 and min(n0, n1) >= min_n
    value = None
    if enough:
        from scipy.stats import spearmanr

        ref = [reference[f][1] / reference[f][0] for f in common]
        cur = [current[f][1] / current[f][0] for f in common]
        rho = float(spearmanr(ref, cur).statistic)
        value = 1.0 - rho if np.isfinite(rho) else 0.0  # constant rankings: no order to change
    return _result("attributions", RANK, value, RANK_THRESHOLD, (n0, n1), enough, where)
