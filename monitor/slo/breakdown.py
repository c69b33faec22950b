"""Where the time goes: latency per stage, each stage's share, and which stage moved.

Events may carry stage timings besides the end-to-end `latency_ms` (`queue_ms`,
`preprocess_ms`, `model_ms`, `postprocess_ms`, `network_ms`, any subset); each is kept in its
own mergeable log-scale sketch per window, version and slice (`ServingSummary.stage`), so its
p50/p95/p99 are within the sketch's 1 % of an actual value, exactly as for total latency.

Percentiles do not add: the p95 of a sum is not the sum of the p95s, and the slowest requests of
one stage are rarely the slowest of another. So the two shares given per stage are defined as:

- `p95_share` = the stage's own p95 / the total p95. It says how large that stage's tail is next
  to the end-to-end tail, not how much of the slow requests' time it took; the shares need not add
  up to 1 (above 1 together when stage tails fall on different requests). Attributing the slow
  requests' time exactly would need every request's stages together, which per-field sketches do
  not keep.
- `mean_share` = the stage's mean / the total mean (sums from the sketches). Means do add, so when
  every event carries every stage and `latency_ms` is their sum, the shares add up to 1 and what
  is missing is time no stage reports.

Each is over the events that carried that stage (and `latency_ms`); None without them.

:func:`latency_shift` compares two summaries (baseline/stable vs current/canary) at one quantile:
the total's change and each stage's change at the same quantile, naming the stage that moved
most in the total's direction ("p95 +18 ms, of which model +16 ms"). A change smaller than two
sketch errors (2 × 1 % of the larger value) is not counted as a move. Stage changes are of the
stage's own quantile, so they can exceed the total's: read "of which" as "the stage whose tail
moved", not as an exact split.

Next to latency stand the window's measures (`monitor.common.measures`: GPU utilisation and
memory, CPU, queue depth, batch size, time to first token...), each with its p50/p95/p99 and
largest value over the events that carried it, so "latency up because the GPU saturated" reads
off one breakdown; the text adds the resource measures' p95 ("gpu_utilization p95 98 percent").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.engine import Engine

from monitor.common.measures import MEASURES
from monitor.profiles.serving import RELATIVE_ERROR, STAGES, LatencySketch, ServingSummary
from monitor.storage import WindowServing, session_factory

__all__ = [
    "QUANTILES",
    "LatencyBreakdown",
    "LatencyShift",
    "MeasureStats",
    "StageLatency",
    "StageShift",
    "WindowBreakdown",
    "latency_breakdown",
    "latency_explanations",
    "latency_shift",
    "window_breakdowns",
]

QUANTILES = (0.5, 0.95, 0.99)


def _mean(sketch: LatencySketch) -> float | None:
    return sketch.total() / sketch.n if sketch.n else None


def _ratio(part: float | None, whole: float | None) -> float | None:
    return None if part is None or not whole else part / whole


@dataclass(frozen=True)
class StageLatency:
    """One stage's percentiles (ms) and its shares of the total (see the module)."""

    stage: str
    n: int
    p50: float | None
    p95: float | None
    p99: float | None
    p95_share: float | None
    mean_share: float | None


@dataclass(frozen=True)
class MeasureStats:
    """One measure's percentiles and largest value in its unit (`monitor.common.measures`)."""

    measure: str
    unit: str
    n: int
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None

    def text(self) -> str:
        """E.g. "gpu_utilization p95 98 percent"."""
        stem = MEASURES[self.measure].stem
        return f"{stem} p95 {self.p95:.3g} {self.unit}".rstrip()


def measure_stats(summary: ServingSummary) -> tuple[MeasureStats, ...]:
    """Each registered measure some event of `summary` carried, in registry order."""
    out = []
    for m in MEASURES.values():
        sketch = summary.measure(m.name)
        if sketch.n:
            p50, p95, p99, top = (sketch.quantile(q) for q in (*QUANTILES, 1.0))
            out.append(MeasureStats(m.name, m.unit, sketch.n, p50, p95, p99, top))
    return tuple(out)


@dataclass(frozen=True)
class LatencyBreakdown:
    """End-to-end percentiles (ms), the stages some event reported in STAGES order, and the
    measures some event carried (registry order)."""

    n: int
    p50: float | None
    p95: float | None
    p99: float | None
    stages: tuple[StageLatency, ...]
    measures: tuple[MeasureStats, ...] = ()

    def text(self) -> str:
        """E.g. "p95 250 ms; stage p95: model 200 ms (80 %), queue 40 ms (16 %); gpu_utilization
        p95 98 percent" (resource measures last, where events carried them)."""
        if self.p95 is None:
            return "no latency"
        parts = [
            f"{s.stage} {s.p95:.3g} ms ({s.p95_share:.0%})"
            for s in sorted(self.stages, key=lambda s: -(s.p95 or 0.0))
            if s.p95 is not None and s.p95_share is not None
        ]
        head = f"p95 {self.p95:.3g} ms"
        text = f"{head}; stage p95: {', '.join(parts)}" if parts else head
        resources = [m.text() for m in self.measures if MEASURES[m.measure].kind == "resource"]
        return "; ".join([text, *resources])


def latency_breakdown(summary: ServingSummary) -> LatencyBreakdown:
    """Percentiles of the total and of each stage of `summary`, with each stage's shares."""
    total = summary.latency
    p50, p95, p99 = (total.quantile(q) for q in QUANTILES)
    mean = _mean(total)
    stages = []
    for name in STAGES:
        sketch = summary.stage(name)
        if not sketch.n:
            continue
        s50, s95, s99 = (sketch.quantile(q) for q in QUANTILES)
        stages.append(
            StageLatency(
                name, sketch.n, s50, s95, s99, _ratio(s95, p95), _ratio(_mean(sketch), mean)
            )
        )
    return LatencyBreakdown(total.n, p50, p95, p99, tuple(stages), measure_stats(summary))


@dataclass(frozen=True)
class StageShift:
    """One stage's quantile in the baseline and now (ms); `moved` beyond the sketches' error."""

    stage: str
    baseline: float | None
    current: float | None

    @property
    def delta(self) -> float | None:
        return (
            None if self.baseline is None or self.current is None else self.current - self.baseline
        )

    @property
    def moved(self) -> bool:
        return _moved(self.baseline, self.current)


def _moved(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return False
    return abs(b - a) > 2 * RELATIVE_ERROR * max(a, b)


def _ms(delta: float) -> str:
    """Whole milliseconds from 10 ms on, two significant digits below."""
    return f"{delta:+.0f} ms" if abs(delta) >= 10 else f"{delta:+.2g} ms"


@dataclass(frozen=True)
class LatencyShift:
    """How the total's quantile `q` changed and which stage moved most the same way."""

    q: float
    baseline: float | None
    current: float | None
    stages: tuple[StageShift, ...]

    @property
    def delta(self) -> float | None:
        return (
            None if self.baseline is None or self.current is None else self.current - self.baseline
        )

    @property
    def stage(self) -> StageShift | None:
        """The stage whose quantile moved most in the total's direction (None: none did)."""
        delta = self.delta
        if not delta:
            return None
        same = [s for s in self.stages if s.moved and (s.delta or 0.0) * delta > 0]
        return max(same, key=lambda s: abs(s.delta or 0.0), default=None)

    def text(self) -> str:
        """E.g. "p95 +18 ms, of which model +16 ms"; "" when either side has no latency."""
        delta = self.delta
        if delta is None:
            return ""
        head = f"p{round(self.q * 100)} {_ms(delta)}"
        stage = self.stage
        if stage is not None and stage.delta is not None:
            return f"{head}, of which {stage.stage} {_ms(stage.delta)}"
        if self.stages and _moved(self.baseline, self.current):
            return f"{head}, no reported stage moved"
        return head


def latency_shift(
    baseline: ServingSummary, current: ServingSummary, q: float = 0.95
) -> LatencyShift:
    """The change of quantile `q` from `baseline` to `current`, total and per stage (only the
    stages both report)."""
    stages = tuple(
        StageShift(name, baseline.stage(name).quantile(q), current.stage(name).quantile(q))
        for name in STAGES
        if baseline.stage(name).n and current.stage(name).n
    )
    return LatencyShift(q, baseline.latency.quantile(q), current.latency.quantile(q), stages)


@dataclass(frozen=True)
class WindowBreakdown:
    """One stored window's (or slice's) breakdown and its change since the version's previous
    window of the same slice (None for the first one in the range)."""

    version: str
    window_start: datetime
    window_end: datetime
    slice_key: str
    breakdown: LatencyBreakdown
    shift: LatencyShift | None

    def text(self) -> str:
        """E.g. "p95 +18 ms, of which model +16 ms since the previous window; p95 250 ms; stage
        p95: model 200 ms (80%)" (the change only where there is a previous window)."""
        change = self.shift.text() if self.shift is not None else ""
        now = self.breakdown.text()
        return f"{change} since the previous window; {now}" if change else now


def window_breakdowns(
    engine: Engine,
    model: str,
    start: datetime,
    end: datetime,
    version: str | None = None,
    slice_key: str | None = None,
) -> list[WindowBreakdown]:
    """The breakdown of every stored serving window starting in [start, end) and each slice
    (one version's, one slice key's when given), newest window first."""
    t = WindowServing
    stmt = select(t).where(t.model == model, t.window_start >= start, t.window_start < end)
    if version is not None:
        stmt = stmt.where(t.version == version)
    if slice_key is not None:
        stmt = stmt.where(t.slice_key == slice_key)
    stmt = stmt.order_by(t.version, t.slice_key, t.window_start)
    with session_factory(engine)() as s:
        rows = [
            (r.version, r.window_start, r.window_end, r.slice_key, ServingSummary.from_row(r))
            for r in s.scalars(stmt)
        ]
    return sorted(_with_shifts(rows), key=lambda w: w.window_start, reverse=True)


def _with_shifts(
    rows: Sequence[tuple[str, datetime, datetime, str, ServingSummary]],
) -> list[WindowBreakdown]:
    out = []
    previous: tuple[str, str, ServingSummary] | None = None
    for version, start, end, key, summary in rows:
        shift = None
        if previous is not None and previous[:2] == (version, key):
            shift = latency_shift(previous[2], summary)
        out.append(WindowBreakdown(version, start, end, key, latency_breakdown(summary), shift))
        previous = (version, key, summary)
    return out


def latency_explanations(
    engine: Engine, model: str, start: datetime, end: datetime, version: str | None = None
) -> dict[tuple[str, datetime, str], str]:
    """:meth:`WindowBreakdown.text` of each (version, window start, slice key) in [start, end)."""
    return {
        (w.version, w.window_start, w.slice_key): w.text()
        for w in window_breakdowns(engine, model, start, end, version)
    }
