"""The `segments` job: each configured segment check run on its own schedule against its sources.

Like skew checks, each check is claimed per (check, its interval window); reading each source
is its own `job_failures` item (`segments <check> source <source>`) and the search another
(`segments <check>`), so one failing check never stops the others. A window that cannot be
searched (a missing column, too few rows, one label class) is not a failure: the run is stored
with status `insufficient_data` and the reason.
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
from monitor.config import Config, SegmentCheckConfig
from monitor.segments import mark_persistence, search_check, segment_history, store_segments
from monitor.skew_runs import read_source

SEGMENTS_JOB = "segments"
CHECK_CLAIMS = "segments check"


class SegmentWatch(PacedChecks[SegmentCheckConfig]):
    """The job's body: run every due segment check, mark what persists, store it."""

    job = SEGMENTS_JOB
    claims = CHECK_CLAIMS

    def checks(self) -> Sequence[SegmentCheckConfig]:
        return self.config.segments

    def run_check(self, check: SegmentCheckConfig, now: datetime) -> bool:
        """Read the sources, search, store; False when an item failed (it is recorded)."""
        frames: list[Any] = []
        for src in (check.current, check.reference):
            if src is None:
                frames.append(None)
                continue
            item = f"segments {check.name} source {src.name}"
            frame = self.isolation.attempt(item, functools.partial(read_source, src, None),
                                           check.model)  # fmt: skip
            if frame is None:
                return False
            frames.append(frame)

        def search() -> int:
            report = search_check(check, frames[0], frames[1])
            previous = segment_history(self.engine, check.name, limit=1)
            doc = mark_persistence(report, previous[0] if previous else None)
            return store_segments(self.engine, check, doc, now)

        return self.isolation.attempt(f"segments {check.name}", search, check.model) is not None


def segment_signals(
    engine: Engine, config: Config, metrics: ModelwatchMetrics | None, now: datetime
) -> list[Signal]:
    """A `segment` signal per segment of each check's newest run (labelled `new` or
    `persisting`), `evaluation_failed` per failing source or check; sets the gauges."""
    out: list[Signal] = []
    for check in config.segments:
        runs = segment_history(engine, check.name, limit=1)
        if not runs:
            continue
        segments = runs[0].report.get("segments", [])
        new = sum(1 for s in segments if s.get("persistence") == "new")
        if metrics is not None:
            metrics.set_segments(check.name, check.model, check.mode, new, len(segments) - new)
        out += [_signal(check, s, now) for s in segments]
    return out + failed_signals(engine, SEGMENTS_JOB, now)


def _signal(check: SegmentCheckConfig, segment: dict[str, Any], now: datetime) -> Signal:
    labels = {"model": check.model, "check": check.name, "mode": check.mode,
              "segment": str(segment.get("description", ""))[:200],
              "persistence": str(segment.get("persistence", "new"))}  # fmt: skip
    return Signal("segment", labels, abs(float(segment.get("effect", 0.0))), 0.0, True, now)
