"""The `skew` job: each configured skew check run on its own schedule against its sources.

Each check is claimed per (check, its interval window) like canary pairs. Reading each source
is its own `job_failures` item (`skew <check> source <source>`), so a missing file or a failing
query is named in its `evaluation_failed` signal, and the comparison another
(`skew <check>`); one failing check never stops the others.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine

from alerts import Signal
from dashboards.metrics import ModelwatchMetrics
from monitor.app.daemon._canary_job import failed_signals
from monitor.app.daemon._paced import PacedChecks
from monitor.config import Config, SkewCheckConfig
from monitor.skew_runs import compare_frames, read_source, skew_history, store_skew

SKEW_JOB = "skew"
CHECK_CLAIMS = "skew check"
# Features of a check exported as gauges and signals, worst first (bounded labels).
MAX_SKEW_COLUMNS = 50


class SkewWatch(PacedChecks[SkewCheckConfig]):
    """The job's body: run every due check, store it."""

    job = SKEW_JOB
    claims = CHECK_CLAIMS

    def checks(self) -> Sequence[SkewCheckConfig]:
        return self.config.skew

    def run_check(self, check: SkewCheckConfig, now: datetime) -> bool:
        """Read both sources, compare, store; False when an item failed (it is recorded)."""
        frames = []
        for src in (check.serving, check.offline):
            item = f"skew {check.name} source {src.name}"
            read = functools.partial(read_source, src, check.key)
            frame = self.isolation.attempt(item, read, check.model)
            if frame is None:
                return False
            frames.append(frame)

        def compare() -> int:
            return store_skew(self.engine, check, compare_frames(check, *frames), now)

        return self.isolation.attempt(f"skew {check.name}", compare, check.model) is not None


def skew_signals(
    engine: Engine, config: Config, metrics: ModelwatchMetrics | None, now: datetime
) -> list[Signal]:
    """A `skew` signal per compared feature of each check's newest run (firing above the
    check's threshold), `evaluation_failed` per failing source or check; sets the gauges."""
    out: list[Signal] = []
    for check in config.skew:
        runs = skew_history(engine, check.name, limit=1)
        if not runs:
            continue
        rates = _rates(runs[0].report)
        if metrics is not None:
            metrics.set_skew(check.name, check.model, rates)
        out += [
            Signal(
                "skew",
                {"model": check.model, "check": check.name, "column": column},
                rate,
                check.threshold,
                rate > check.threshold,
                now,
            )  # fmt: skip
            for column, rate in rates.items()
        ]
    return out + failed_signals(engine, SKEW_JOB, now)


def _rates(report: dict[str, Any]) -> dict[str, float]:
    """Mismatch rate per feature, worst first (the stored order), at most MAX_SKEW_COLUMNS."""
    features = report.get("features", [])[:MAX_SKEW_COLUMNS]
    return {str(f["column"]): float(f["mismatch_rate"]) for f in features}
