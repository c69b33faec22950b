"""Fairness metrics of a window from its groups' counts: simultaneous intervals and statuses.

Per protected attribute, groups are the attribute's slice values, without `(null)` and
`(other)` (a missing value and a bucket of many values are not a group), at most
`max_groups` of them (the largest). A rate is compared only between groups with at least
`min_group_n` supporting rows; the pairs compared are every pair of those groups, or each
group with the attribute's reference group. Every pair's interval is drawn at the Bonferroni
level 1 - alpha / pairs, so all of them cover at once with probability at least 1 - alpha,
and so does the interval of the metric, which is their maximum (minimum for a ratio). A status
is `violation` only when that whole interval lies beyond the bound: when the true metric is
within its bound, a window is called a violation with probability at most alpha.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from monitor.config import FairnessConfig
from monitor.fairness._base import (
    COMPARISONS,
    NO_LABELS,
    FairnessResult,
    FairnessStatus,
    GroupCounts,
)
from monitor.fairness._intervals import absolute, folded, katz, newcombe, simultaneous_z
from monitor.outcomes import wilson
from monitor.outcomes.summary import ClassificationSummary, OutcomeSummary
from monitor.profiles import NULL_VALUE, OTHER_VALUE

Groups = Mapping[str, GroupCounts]
Interval = tuple[float, float, float]  # value, ci_low, ci_high
_Z95 = simultaneous_z(0.05, 1)
Selections = Sequence[tuple[dict[str, str] | None, int, int]]  # slice, scored, selected


@dataclass(frozen=True)
class _Rate:
    """A per-group rate: its metric name, what its support counts, successes and trials."""

    metric: str
    support: str
    successes: Callable[[GroupCounts], int]
    trials: Callable[[GroupCounts], int]


SELECTION = _Rate("selection_rate", "predictions", lambda c: c.selected, lambda c: c.scored)
TPR = _Rate("true_positive_rate", "actual positives", lambda c: c.tp, lambda c: c.tp + c.fn)
FPR = _Rate("false_positive_rate", "actual negatives", lambda c: c.fp, lambda c: c.fp + c.tn)


@dataclass(frozen=True)
class _Compared:
    """One rate of the groups with enough support, and the pairs of them compared."""

    x: list[int]
    n: list[int]
    pairs: list[tuple[int, int]]


def groups_of(
    summaries: Sequence[tuple[dict[str, str] | None, OutcomeSummary]],
    attributes: Sequence[str],
    selections: Selections = (),
) -> dict[str, dict[str, GroupCounts]]:
    """Counts per attribute and group from a window's merged per-slice outcome summaries
    (labelled rows) and per-slice selection counts (all predictions: `window_counts`); an
    attribute with neither is absent."""
    out: dict[str, dict[str, GroupCounts]] = {}
    for slice_, summary in summaries:
        found = _group(slice_, attributes)
        if found is not None and isinstance(summary, ClassificationSummary):
            out.setdefault(found[0], {})[found[1]] = GroupCounts.of(summary)
    for slice_, scored, selected in selections:
        found = _group(slice_, attributes)
        if found is not None and scored:
            groups = out.setdefault(found[0], {})
            labelled = groups.get(found[1], GroupCounts())
            groups[found[1]] = labelled.merge(GroupCounts(scored=scored, selected=selected))
    return out


def _group(slice_: dict[str, str] | None, attributes: Sequence[str]) -> tuple[str, str] | None:
    """(attribute, group) of a one-column slice of a protected attribute, else None."""
    if not slice_ or len(slice_) != 1:
        return None
    ((column, value),) = slice_.items()
    return (column, value) if column in attributes else None


def evaluate_fairness(groups: Mapping[str, Groups], cfg: FairnessConfig) -> list[FairnessResult]:
    """Every fairness metric of every configured attribute: the comparisons, then per group."""
    out: list[FairnessResult] = []
    for attribute in cfg.attributes:
        found = groups.get(attribute) or {}
        kept = _kept(found, cfg.max_groups)
        problem = _problem(attribute, found, kept)
        if problem is not None:
            out += [_insufficient(attribute, m, problem) for m in COMPARISONS]
        else:
            out += _comparisons(attribute, kept, cfg)
        out += _per_group(attribute, kept, cfg)
    return out


def _kept(found: Groups, cap: int) -> dict[str, GroupCounts]:
    """The groups compared: not null or other, the `cap` largest (ties by name), by name."""
    real = [(g, c) for g, c in found.items() if g not in (NULL_VALUE, OTHER_VALUE) and c.size]
    real.sort(key=lambda gc: (-gc[1].size, gc[0]))
    return dict(sorted(real[:cap]))


def _problem(attribute: str, found: Groups, kept: Groups) -> str | None:
    """Why the attribute's groups cannot be compared at all, or None."""
    if not any(c.size for c in found.values()):
        return f"attribute {attribute!r} is missing from the window (no predictions)"
    if not kept:
        if set(found) <= {NULL_VALUE}:
            return f"every row's {attribute!r} is null"
        return f"{attribute!r} has no group (only null or other values)"
    if len(kept) == 1:
        return f"only one group of {attribute!r} ({next(iter(kept))!r})"
    return None


def _comparisons(attribute: str, kept: Groups, cfg: FairnessConfig) -> list[FairnessResult]:
    bounds, alpha = cfg.bounds(), cfg.alpha
    ref = cfg.reference_group.get(attribute)
    sel, tpr, fpr = (
        _compare(attribute, kept, r, ref, cfg.min_group_n) for r in (SELECTION, TPR, FPR)
    )
    diff, limit = bounds.max_difference, bounds.min_ratio
    out = [
        _judged(attribute, COMPARISONS[0], sel, lambda c: _difference([c], alpha), diff),
        _judged(attribute, COMPARISONS[1], sel, lambda c: _ratio(c, alpha), limit, below=True),
        _judged(attribute, COMPARISONS[2], tpr, lambda c: _difference([c], alpha), diff),
    ]
    both = tpr if isinstance(tpr, str) else fpr if isinstance(fpr, str) else (tpr, fpr)
    out.append(_judged(attribute, COMPARISONS[3], both, lambda c: _difference(c, alpha), diff))
    return out


def _compare(
    attribute: str, groups: Groups, rate: _Rate, ref: str | None, min_n: int
) -> _Compared | str:
    """The rate's groups with at least `min_n` supporting rows and the pairs compared, or
    why they cannot be compared."""
    if not any(rate.trials(c) for c in groups.values()):
        if rate is SELECTION:
            return ("no predictions counted (a window ingested before selection counts, or "
                    "before `fairness` was configured)")  # fmt: skip
        if not any(c.n for c in groups.values()):
            return NO_LABELS
    eligible = {g: c for g, c in groups.items() if rate.trials(c) >= min_n}
    if ref is not None and ref not in eligible:
        have = rate.trials(groups[ref]) if ref in groups else 0
        return (f"reference group {ref!r} of {attribute!r} has {have} {rate.support} "
                f"(fewer than {min_n})")  # fmt: skip
    if len(eligible) < 2:
        if rate is not SELECTION and not any(rate.trials(c) for c in groups.values()):
            return f"labels hold a single class: no {rate.support} in any group of {attribute!r}"
        listed = ", ".join(f"{g}: {rate.trials(c)}" for g, c in groups.items())
        return (f"fewer than 2 groups of {attribute!r} with at least {min_n} {rate.support} "
                f"({listed})")  # fmt: skip
    names = list(eligible)
    if ref is not None:
        pairs = [(names.index(ref), j) for j, g in enumerate(names) if g != ref]
    else:
        pairs = list(combinations(range(len(names)), 2))
    counts = list(eligible.values())
    return _Compared([rate.successes(c) for c in counts], [rate.trials(c) for c in counts], pairs)


def _difference(families: Sequence[_Compared], alpha: float) -> Interval:
    """The largest |rate difference| over the families' pairs, with its simultaneous interval
    (all pairs of all families at once: equalized odds judges TPR and FPR together)."""
    z = simultaneous_z(alpha, sum(len(f.pairs) for f in families))
    value = low = high = 0.0
    for f in families:
        for i, j in f.pairs:
            a, b = absolute(*newcombe(f.x[i], f.n[i], f.x[j], f.n[j], z))
            value = max(value, abs(f.x[i] / f.n[i] - f.x[j] / f.n[j]))
            low, high = max(low, a), max(high, b)
    return value, low, high


def _ratio(f: _Compared, alpha: float) -> Interval | str:
    """The smallest ratio of two groups' rates (smaller over larger) over the pairs, with its
    simultaneous interval (Katz); undefined when no group has a positive prediction."""
    rates = [x / n for x, n in zip(f.x, f.n, strict=True)]
    if not any(rates):
        return "no group has a positive prediction: the ratio is undefined"
    z = simultaneous_z(alpha, len(f.pairs))
    value = low = high = 1.0
    for i, j in f.pairs:
        p, q = rates[i], rates[j]
        a, b = folded(*katz(f.x[i], f.n[i], f.x[j], f.n[j], z))
        value = min(value, 1.0 if p == q else min(p, q) / max(p, q))
        low, high = min(low, a), min(high, b)
    return value, low, high


def _judged(
    attribute: str,
    metric: str,
    compared: _Compared | tuple[_Compared, ...] | str,
    compute: Callable[..., Interval | str],
    bound: float,
    below: bool = False,
) -> FairnessResult:
    """The metric's result: `violation` when its whole interval is past `bound` (above it;
    below it with `below`), `insufficient_data` with the reason when it cannot be computed."""
    if isinstance(compared, str):
        return _insufficient(attribute, metric, compared, bound)
    found = compute(compared)
    if isinstance(found, str):
        return _insufficient(attribute, metric, found, bound)
    value, low, high = found
    families = compared if isinstance(compared, tuple) else (compared,)
    n = max(sum(f.n) for f in families)
    past = high < bound if below else low > bound
    status: FairnessStatus = "violation" if past else "ok"
    return FairnessResult(attribute, metric, None, value, low, high, bound, n, status)


def _insufficient(
    attribute: str, metric: str, reason: str, bound: float | None = None, n: int = 0,
    group: str | None = None,
) -> FairnessResult:  # fmt: skip
    slice_ = None if group is None else {attribute: group}
    return FairnessResult(
        attribute, metric, slice_, None, None, None, bound, n, "insufficient_data", reason
    )


def _per_group(attribute: str, kept: Groups, cfg: FairnessConfig) -> list[FairnessResult]:
    """Each group's rates (95% Wilson intervals, no verdict) and calibration error."""
    rates = [_group_rate(attribute, g, c, r, cfg.min_group_n)
             for g, c in kept.items() for r in (SELECTION, TPR, FPR)]  # fmt: skip
    return rates + _calibration(attribute, kept, cfg)


def _group_rate(
    attribute: str, group: str, c: GroupCounts, rate: _Rate, min_n: int
) -> FairnessResult:
    """One group's rate: the selection rate over its predictions, error rates over its
    labelled rows."""
    x, n = rate.successes(c), rate.trials(c)
    if rate is not SELECTION and not c.n:
        return _insufficient(attribute, rate.metric, NO_LABELS, None, 0, group)
    if n < min_n:
        why = f"{n} {rate.support} (fewer than {min_n})"
        return _insufficient(attribute, rate.metric, why, None, n, group)
    low, high = wilson(x, n, _Z95)
    return FairnessResult(attribute, rate.metric, {attribute: group}, x / n, low, high, None, n,
                          "ok")  # fmt: skip


def _calibration(attribute: str, kept: Groups, cfg: FairnessConfig) -> list[FairnessResult]:
    """|observed positive rate - mean score| of each group, its interval simultaneous over
    the groups: a Wilson interval of the observed rate less the (given) mean score, which
    covers at least as often as promised (the rows' own variances sum to at most the
    pooled one)."""
    bound, min_n = cfg.bounds().max_calibration_error, cfg.min_group_n
    sized = [g for g, c in kept.items() if c.n >= min_n]
    z = simultaneous_z(cfg.alpha, len(sized))
    out = []
    for group, c in kept.items():
        if group not in sized:
            why = f"{c.n} labelled rows (fewer than {min_n})" if c.n else NO_LABELS
            out.append(_insufficient(attribute, "calibration_error", why, bound, c.n, group))
            continue
        observed, expected = (c.tp + c.fn) / c.n, c.score_sum / c.n
        low, high = absolute(*(w - expected for w in wilson(c.tp + c.fn, c.n, z)))
        gap = abs(observed - expected)
        status: FairnessStatus = "violation" if low > bound else "ok"
        slice_ = {attribute: group}
        out.append(FairnessResult(attribute, "calibration_error", slice_, gap, low, high,
                                  bound, c.n, status))  # fmt: skip
    return out
