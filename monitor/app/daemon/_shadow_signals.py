"""The evaluate job's `shadow` signals and gauges: the newest window with pairs of each
(primary, shadow) version pair of a model in paired shadow mode, every slice judged
(`monitor.shadow`).

One signal per shadow version, slice and criterion that has its evidence
(`shadow.min_pairs`): `flip_rate` (value: the flip rate's Wilson lower bound, threshold
`shadow.max_flip_rate`) and `mcnemar` (value: the exact p-value, threshold `shadow.alpha`).
Windows older than `LOOKBACK` windows are not judged: a shadow that stopped sends nothing.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Engine

from alerts import Signal
from dashboards.metrics import ModelwatchMetrics
from monitor.config import ModelConfig
from monitor.profiles import slice_label
from monitor.shadow import ShadowResult, latest_results

LOOKBACK = 3  # windows (`collect.window`) back from now that count as the newest


class ShadowSignals:
    """`shadow` signals of one model, and its `modelwatch_shadow_statistic` series."""

    def __init__(
        self,
        engine: Engine,
        cfg: ModelConfig,
        window_s: float,
        metrics: ModelwatchMetrics | None = None,
    ) -> None:
        self.engine = engine
        self.cfg = cfg
        self.window_s = window_s
        self.metrics = metrics
        self._series: set[tuple[str, ...]] = set()

    def __call__(self, now: datetime) -> list[Signal]:
        since = datetime.fromtimestamp(now.timestamp() - LOOKBACK * self.window_s, now.tzinfo)
        results = latest_results(self.cfg, self.engine, since)
        self._publish(results)
        return [s for r in results for s in signals_of(r, self.cfg, now)]

    def _publish(self, results: list[ShadowResult]) -> None:
        if self.metrics is None:
            return
        series: set[tuple[str, ...]] = set()
        for r in results:
            stats = {
                "pairs": float(r.pairs),
                "flip_rate": r.flip_rate,
                "flip_rate_low": r.flip_rate_low,
                "flip_rate_high": r.flip_rate_high,
                "abs_diff_mean": r.abs_diff_mean,
                "abs_diff_p99": r.abs_diff_p99,
                "latency_ratio_mean": r.latency_ratio_mean,
                "latency_ratio_p99": r.latency_ratio_p99,
                "mcnemar_p": r.mcnemar_p,
                "metric_diff": r.metric_diff,
            }
            done = self.metrics.set_shadow(
                r.model, r.primary_version, r.shadow_version, r.slice_key or None,
                {k: v for k, v in stats.items() if v is not None},
            )  # fmt: skip
            series.update(done)
        for gone in self._series - series:
            self.metrics.shadow_statistic.remove(*gone)
        self._series = series


def signals_of(result: ShadowResult, cfg: ModelConfig, now: datetime) -> list[Signal]:
    """The `shadow` signals of one result: each criterion that has its evidence."""
    assert cfg.shadow is not None
    shadow = cfg.shadow
    labels = {
        "model": result.model,
        "version": result.shadow_version,
        "primary_version": result.primary_version,
        "slice": slice_label(result.slice_key),
    }
    out = []
    if result.flip_rate_low is not None and result.decided >= shadow.min_pairs:
        out.append(
            Signal("shadow", {**labels, "criterion": "flip_rate"}, result.flip_rate_low,
                   shadow.max_flip_rate, "flip_rate" in result.failed, now)
        )  # fmt: skip
    cells = result.labelled if result.metric == "accuracy_diff" else 0
    if result.mcnemar_p is not None and cells >= shadow.min_pairs:
        out.append(
            Signal("shadow", {**labels, "criterion": "mcnemar"}, result.mcnemar_p,
                   shadow.alpha, "mcnemar" in result.failed, now)
        )  # fmt: skip
    return out
