"""Serving SLOs per window and slice, from the stored serving summaries.

Objectives (`slo:` of a model): `latency_p95_ms`, `latency_p99_ms` (percentiles from the
log-scale sketch, never averages), `error_rate` (errored / all requests), `min_rps` (requests
per second over the part of the window that has passed) and `cost_per_1k` (see below). A
window (or slice) with fewer than `slo.min_events` requests is `insufficient_data` for latency
and error rate; throughput and cost are judged on any traffic (low traffic is what they are about).

Cost is charged to whoever caused it (`CostBasis`). A version's hourly cost is its own
`hourly_price × replicas` when the registry holds them in its settings (`models register
--hourly-price --replicas`); the versions without their own price share the configured fleet
(`slo.cost_per_1k.hourly_price × replicas`) in proportion to their requests in the window. A
slice is charged its version's hourly cost × its share of the version's requests (or of its
summed latency with `share: compute_time`). Cost per 1,000 = hourly cost × hours elapsed in the
window / requests × 1,000, so with request shares every slice of a version costs what the
version costs per request, and a canary on one replica is not charged the whole fleet.

The evaluate job stores the results of each window that changed as `slo_results` rows
(:func:`record_window_slo`), which the SQL dashboards read; throughput and cost of a window
still filling are as of its last change. A window whose SLO evaluation fails is an item of the
job (`monitor.failures`), tried again after its backoff (:func:`retry_failed_slo`) though it
does not change again.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Select, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.common.measures import objective_of
from monitor.config.serving import CostConfig, SloConfig, TokenCostConfig
from monitor.failures import Isolation, failing_windows, window_item
from monitor.profiles import OVERALL
from monitor.profiles.serving import ServingSummary
from monitor.results.store import store_slo_results
from monitor.slo.result import SloResult, SloStatus
from monitor.storage import (
    Model,
    ModelVersion,
    WindowServing,
    session_factory,
    transaction,
    utcnow,
)

# The fixed objectives; `slo.measures` adds one per configured measure objective.
OBJECTIVES = (
    "latency_p95_ms", "latency_p99_ms", "error_rate", "min_rps", "cost_per_1k",
    "cost_per_1k_tokens",
)  # fmt: skip
SLO_ITEM = "slo"  # the kind of a window's SLO evaluation item (`window_item`)


@dataclass(frozen=True)
class ServingWindow:
    """A stored serving summary and where it belongs."""

    model: str
    version: str
    window_start: datetime
    window_end: datetime
    slice_key: str
    summary: ServingSummary


@dataclass(frozen=True)
class CostBasis:
    """What a window's cost is charged from.

    `own`: dollars per hour of the versions registered with their own price; `overall`: each
    (version, window start)'s whole-window summary, which slices are shares of; `fleet`: the
    requests of the versions without their own price, per window start, which share the fleet.
    """

    own: Mapping[str, float] = field(default_factory=dict)
    overall: Mapping[tuple[str, datetime], ServingSummary] = field(default_factory=dict)

    def fleet_requests(self, start: datetime) -> int:
        return sum(
            s.requests for (v, t), s in self.overall.items() if t == start and v not in self.own
        )

    def hourly(self, cfg: CostConfig, window: ServingWindow) -> float | None:
        """Dollars per hour charged to `window`'s slice of its version (None without traffic)."""
        version = self.overall.get((window.version, window.window_start), window.summary)
        if window.version in self.own:
            cost = self.own[window.version]
        else:
            fleet = self.fleet_requests(window.window_start) or version.requests
            if not fleet:
                return None
            cost = cfg.hourly_price * cfg.replicas * version.requests / fleet
        share = _share(cfg, window.summary, version)
        return None if share is None else cost * share


def _share(cfg: CostConfig, part: ServingSummary, whole: ServingSummary) -> float | None:
    """`part`'s share of `whole`'s cost: of its requests, or of its summed latency."""
    if cfg.share == "compute_time":
        sketch = "model_latency" if whole.model_latency.n else "latency"
        total = getattr(whole, sketch).total()
        if total > 0:
            return float(getattr(part, sketch).total() / total)
    return part.requests / whole.requests if whole.requests else None


def version_prices(engine: Engine, model: str) -> dict[str, float]:
    """Dollars per hour of `model`'s versions registered with a price in their settings."""
    stmt = (
        select(ModelVersion.version, ModelVersion.settings)
        .join(Model, ModelVersion.model_id == Model.id)
        .where(Model.name == model)
    )
    with session_factory(engine)() as s:
        rows = s.execute(stmt).all()
    out: dict[str, float] = {}
    for version, settings in rows:
        price = (settings or {}).get("hourly_price")
        if isinstance(price, int | float) and price > 0:
            out[version] = float(price) * int((settings or {}).get("replicas", 1))
    return out


def cost_basis(
    windows: Sequence[ServingWindow], own: Mapping[str, float] | None = None
) -> CostBasis:
    """The basis of `windows` (which should hold every version's whole-window summary)."""
    overall = {(w.version, w.window_start): w.summary for w in windows if w.slice_key == OVERALL}
    return CostBasis(dict(own or {}), overall)


def evaluate_slo(
    window: ServingWindow, cfg: SloConfig, now: datetime, basis: CostBasis | None = None
) -> list[SloResult]:
    """Every configured objective of one window (and slice); cost charged from `basis`
    (default: the window alone, as if its slice were the version's only traffic)."""
    s = window.summary
    elapsed = (min(now, window.window_end) - window.window_start).total_seconds()
    rps = s.requests / elapsed if elapsed > 0 else None
    values: list[tuple[str, float | None, float | None, int, bool, bool]] = []
    enough = s.requests >= cfg.min_events
    for name, q, bound in (("latency_p95_ms", 0.95, cfg.latency_p95_ms),
                           ("latency_p99_ms", 0.99, cfg.latency_p99_ms)):  # fmt: skip
        if bound is not None:
            v = s.latency.quantile(q)
            ok_n = s.latency.n >= cfg.min_events
            values.append((name, v, bound, s.latency.n, ok_n, v is not None and v > bound))
    if cfg.error_rate is not None:
        rate = s.errors / s.requests if s.requests else None
        values.append(("error_rate", rate, cfg.error_rate, s.requests, enough,
                       rate is not None and rate > cfg.error_rate))  # fmt: skip
    if cfg.min_rps is not None:
        values.append(("min_rps", rps, cfg.min_rps, s.requests, rps is not None,
                       rps is not None and rps < cfg.min_rps))  # fmt: skip
    if cfg.cost_per_1k is not None:
        hourly = (basis or cost_basis([window])).hourly(cfg.cost_per_1k, window)
        cost = None if hourly is None else cost_per_1k(hourly, 1, rps)
        bound = cfg.cost_per_1k.max
        values.append(("cost_per_1k", cost, bound, s.requests, cost is not None,
                       cost is not None and bound is not None and cost > bound))  # fmt: skip
    if cfg.cost_per_1k_tokens is not None:
        tokens = _token_cost(window, cfg, basis or cost_basis([window]), elapsed)
        bound = cfg.cost_per_1k_tokens.max
        values.append(("cost_per_1k_tokens", tokens, bound, s.requests, tokens is not None,
                       tokens is not None and bound is not None and tokens > bound))  # fmt: skip
    results = [_result(window, *v) for v in values]
    return results + [
        dataclasses.replace(r, detail=measure_gap(s, r.objective, cfg.min_events))
        for r in (_result(window, *v) for v in _measure_values(s, cfg))
    ]


def _measure_values(
    s: ServingSummary, cfg: SloConfig
) -> list[tuple[str, float | None, float | None, int, bool, bool]]:
    """Each `slo.measures` objective: the statistic of its measure's sketch against the bound."""
    out: list[tuple[str, float | None, float | None, int, bool, bool]] = []
    for name, bound in cfg.measures.items():
        objective = objective_of(name)
        sketch = s.measure(objective.measure.name)
        v = sketch.quantile(objective.q)
        breached = v is not None and objective.breached(v, bound)
        out.append((name, v, bound, sketch.n, sketch.n >= cfg.min_events, breached))
    return out


def measure_gap(summary: ServingSummary, objective: str, min_events: int) -> str | None:
    """Why a measure objective lacks evidence ("no event carried ttft_ms"), else None."""
    measure = objective_of(objective).measure.name
    n = summary.measure(measure).n
    if n >= min_events:
        return None
    if n == 0:
        return f"no event carried {measure}"
    return f"{n} events carried {measure}, fewer than slo.min_events ({min_events})"


def _token_cost(
    window: ServingWindow, cfg: SloConfig, basis: CostBasis, elapsed: float
) -> float | None:
    """Dollars per 1,000 tokens of the window: at per-token prices, else its hourly cost."""
    token_cfg: TokenCostConfig | None = cfg.cost_per_1k_tokens
    assert token_cfg is not None
    inputs = window.summary.measure("input_tokens").total()
    outputs = window.summary.measure("output_tokens").total()
    if inputs + outputs <= 0:
        return None
    if token_cfg.input_price is not None or token_cfg.output_price is not None:
        spent = inputs * (token_cfg.input_price or 0) + outputs * (token_cfg.output_price or 0)
        return spent / (inputs + outputs)
    hourly = None if cfg.cost_per_1k is None else basis.hourly(cfg.cost_per_1k, window)
    if hourly is None or elapsed <= 0:
        return None
    return hourly * elapsed / 3600 / (inputs + outputs) * 1000


def _result(w: ServingWindow, objective: str, value: float | None, threshold: float | None,
            n: int, sufficient: bool, breached: bool) -> SloResult:  # fmt: skip
    status: SloStatus = "insufficient_data" if not sufficient else "breach" if breached else "ok"
    return SloResult(
        w.model, w.version, w.window_start, w.slice_key, objective, value, threshold, n, status
    )


def cost_per_1k(hourly_price: float, replicas: int, rps: float | None) -> float | None:
    """Dollars per 1,000 predictions at `rps` requests per second (None without traffic)."""
    if not rps:
        return None
    return hourly_price * replicas / (rps * 3600) * 1000


def evaluate_windows(
    windows: Sequence[ServingWindow],
    cfg: SloConfig,
    now: datetime,
    own: Mapping[str, float] | None = None,
    peers: Sequence[ServingWindow] = (),
) -> list[SloResult]:
    """SLO results of several windows and slices, in their order. Cost is charged from the
    whole-window summaries among `windows` and `peers` (other versions' windows of the same
    starts) and the versions' `own` hourly prices (:func:`version_prices`)."""
    basis = cost_basis([*windows, *peers], own)
    return [r for w in windows for r in evaluate_slo(w, cfg, now, basis)]


def serving_summary(
    engine: Engine, model: str, version: str, start: datetime, end: datetime
) -> ServingSummary:
    """The merged overall serving summary of `version`'s windows starting in [start, end)."""
    t = WindowServing
    stmt = select(t).where(
        t.model == model, t.version == version, t.slice_key == OVERALL,
        t.window_start >= start, t.window_start < end,
    )  # fmt: skip
    total = ServingSummary()
    with session_factory(engine)() as s:
        for row in s.scalars(stmt):
            total = total.merge(ServingSummary.from_row(row))
    return total


def window_serving(
    engine: Engine, model: str, version: str, start: datetime
) -> dict[str, ServingSummary]:
    """The serving summaries of one window by slice key ("" is the whole window)."""
    t = WindowServing
    stmt = select(t).where(t.model == model, t.version == version, t.window_start == start)
    with session_factory(engine)() as s:
        return {r.slice_key: ServingSummary.from_row(r) for r in s.scalars(stmt)}


def slo_results(
    engine: Engine,
    model: str,
    cfg: SloConfig,
    start: datetime,
    end: datetime,
    now: datetime,
    version: str | None = None,
) -> list[SloResult]:
    """Every objective of every window starting in [start, end) and each of its slices,
    newest window first (one version's with `version`)."""
    t = WindowServing
    stmt = select(t).where(t.model == model, t.window_start >= start, t.window_start < end)
    if version is not None:
        stmt = stmt.where(t.version == version)
    stmt = stmt.order_by(t.window_start.desc(), t.version, t.slice_key)
    with session_factory(engine)() as s:
        windows = _serving_windows(s, stmt)
        peers = _peers(s, model, cfg, start, end, version)
    own = version_prices(engine, model) if cfg.cost_per_1k is not None else {}
    return evaluate_windows(windows, cfg, now, own, peers)


def _serving_windows(s: Session, stmt: Select[WindowServing]) -> list[ServingWindow]:
    return [
        ServingWindow(r.model, r.version, r.window_start, r.window_end, r.slice_key,
                      ServingSummary.from_row(r))
        for r in s.scalars(stmt)
    ]  # fmt: skip


def _peers(
    s: Session, model: str, cfg: SloConfig, start: datetime, end: datetime, version: str | None
) -> list[ServingWindow]:
    """The other versions' whole windows starting in [start, end): their share of the fleet's
    cost ([] when no version is singled out or cost is not an objective)."""
    if version is None or cfg.cost_per_1k is None:
        return []
    t = WindowServing
    return _serving_windows(s, select(t).where(
        t.model == model, t.version != version, t.slice_key == OVERALL,
        t.window_start >= start, t.window_start < end,
    ))  # fmt: skip


def store_window_slo(
    engine: Engine, cfg: SloConfig, model: str, version: str, start: datetime, now: datetime
) -> list[SloResult]:
    """Evaluate every objective of one window's stored serving summaries (overall and each
    slice) and upsert them as `slo_results` rows; [] when the window has no serving rows."""
    t = WindowServing
    stmt = select(t).where(t.model == model, t.version == version, t.window_start == start)
    own = version_prices(engine, model) if cfg.cost_per_1k is not None else {}
    with transaction(engine) as s:
        windows = _serving_windows(s, stmt.order_by(t.slice_key))
        peers = _peers(s, model, cfg, start, start + timedelta(microseconds=1), version)
        results = evaluate_windows(windows, cfg, now, own, peers)
        if windows:
            span = (windows[0].window_start, windows[0].window_end)
            store_slo_results(s, model, version, span, results)
    return results


def slo_item(model: str, version: str, start: datetime) -> str:
    """The evaluate job's item name of one window's SLO evaluation."""
    return window_item(SLO_ITEM, model, version, start)


def record_window_slo(
    isolation: Isolation, engine: Engine, model: str, cfg: SloConfig, version: str,
    start: datetime,
) -> None:  # fmt: skip
    """:func:`store_window_slo` as an item of the job: a failure is recorded, not raised."""
    work = functools.partial(store_window_slo, engine, cfg, model, version, start, utcnow())
    isolation.attempt(slo_item(model, version, start), work, model, version, start)


def retry_failed_slo(isolation: Isolation, engine: Engine, model: str, cfg: SloConfig) -> None:
    """Try again the model's windows whose SLO evaluation failed, once their backoff passed."""
    for version, start in failing_windows(isolation.failing(), SLO_ITEM, model):
        record_window_slo(isolation, engine, model, cfg, version, start)
