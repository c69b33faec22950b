"""The verdict on shadow pairs: a typed result per (model, primary, shadow version, slice) and
period, judged against `models[].shadow`.

Status `diverged` when either criterion has its evidence and fails: `flip_rate` (classification
and multiclass, at least `min_pairs` decided pairs) when the Wilson 95% lower bound of the flip
rate exceeds `max_flip_rate`; `mcnemar` (at least `min_pairs` labelled correctness pairs) when
McNemar's exact p-value is below `alpha`. `insufficient_data` when neither has its evidence;
else `ok`. Regression has no flips and no McNemar: its pairs are reported (score and error
differences) but never diverge. A row of unpaired sides (one version empty) is reported with
its counts and status `insufficient_data`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from monitor.config.shadow import ShadowConfig
from monitor.shadow.statistics import flip_interval, mcnemar_exact, paired_difference
from monitor.shadow.summary import ShadowSummary

__all__ = ["CRITERIA", "ShadowResult", "ShadowStatus", "judge"]

ShadowStatus = Literal["ok", "diverged", "insufficient_data"]
CRITERIA = ("flip_rate", "mcnemar")


@dataclass(frozen=True)
class ShadowResult:
    """Paired statistics of one (model, primary version, shadow version, slice) over
    [start, end), and the verdict (see the module docstring)."""

    model: str
    primary_version: str
    shadow_version: str
    slice_key: str
    start: datetime
    end: datetime
    pairs: int
    decided: int  # pairs with a predicted class on both sides (what flips are counted of)
    unpaired_primary: int
    unpaired_shadow: int
    flip_rate: float | None
    flip_rate_low: float | None
    flip_rate_high: float | None
    abs_diff_mean: float | None
    abs_diff_p99: float | None
    latency_ratio_mean: float | None
    latency_ratio_p99: float | None
    labelled: int
    primary_only: int  # McNemar's b: the primary right, the shadow wrong
    shadow_only: int  # McNemar's c: the shadow right, the primary wrong
    mcnemar_p: float | None
    metric: str | None  # accuracy_diff or abs_error_diff (shadow minus primary)
    metric_diff: float | None
    metric_diff_low: float | None
    metric_diff_high: float | None
    status: ShadowStatus
    failed: tuple[str, ...]  # the criteria that failed

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: times as RFC 3339, `failed` as a list."""
        out = asdict(self)
        out["start"], out["end"] = self.start.isoformat(), self.end.isoformat()
        out["failed"] = list(self.failed)
        return out


def judge(
    key: tuple[str, str, str, str],
    start: datetime,
    end: datetime,
    summary: ShadowSummary,
    cfg: ShadowConfig,
    task: str,
) -> ShadowResult:
    """The result of `summary` for key (model, primary version, shadow version, slice key)."""
    flips = flip_interval(summary.flips, summary.decided)
    cells = summary.both_correct + summary.primary_only + summary.shadow_only + summary.both_wrong
    p = mcnemar_exact(summary.primary_only, summary.shadow_only) if cells else None
    metric, diff = _metric(summary, task)
    failed: list[str] = []
    evidence = False
    if flips is not None and summary.decided >= cfg.min_pairs:
        evidence = True
        if flips[1] > cfg.max_flip_rate:
            failed.append("flip_rate")
    if p is not None and cells >= cfg.min_pairs:
        evidence = True
        if p < cfg.alpha:
            failed.append("mcnemar")
    enough = evidence or (task == "regression" and summary.pairs >= cfg.min_pairs)
    status: ShadowStatus = "insufficient_data"
    if failed:
        status = "diverged"
    elif enough and key[1] and key[2]:
        status = "ok"
    rate, low, high = flips or (None, None, None)
    value, value_low, value_high = diff or (None, None, None)
    return ShadowResult(
        model=key[0],
        primary_version=key[1],
        shadow_version=key[2],
        slice_key=key[3],
        start=start,
        end=end,
        pairs=summary.pairs,
        decided=summary.decided,
        unpaired_primary=summary.unpaired_primary,
        unpaired_shadow=summary.unpaired_shadow,
        flip_rate=rate,
        flip_rate_low=low,
        flip_rate_high=high,
        abs_diff_mean=summary.abs_diff_sum / summary.scored if summary.scored else None,
        abs_diff_p99=summary.abs_diff.quantile(0.99),
        latency_ratio_mean=summary.ratio_sum / summary.timed if summary.timed else None,
        latency_ratio_p99=summary.latency_ratio.quantile(0.99),
        labelled=summary.labelled,
        primary_only=summary.primary_only,
        shadow_only=summary.shadow_only,
        mcnemar_p=p,
        metric=metric,
        metric_diff=value,
        metric_diff_low=value_low,
        metric_diff_high=value_high,
        status=status,
        failed=tuple(failed),
    )


def _metric(
    s: ShadowSummary, task: str
) -> tuple[str | None, tuple[float, float | None, float | None] | None]:
    """The paired metric difference shadow minus primary, with its 95% interval."""
    if not s.labelled:
        return None, None
    if task == "regression":
        return "abs_error_diff", paired_difference(
            s.labelled, s.error_diff_sum, s.error_diff_squares
        )
    discordant = s.primary_only + s.shadow_only
    return "accuracy_diff", paired_difference(
        s.labelled, float(s.shadow_only - s.primary_only), float(discordant)
    )
