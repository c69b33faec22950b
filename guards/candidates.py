"""Candidate comparison: several optimized builds against one reference, side by side.

Each candidate is gated against the reference on the golden set (its preset's tolerances) and
measured on this machine: the task metric and its drop, p95/p99 latency per batch size,
throughput, cost per 1,000 predictions at that throughput, and whether it meets the given SLOs.
SLO keys: `latency_p95_ms`, `latency_p99_ms` (at the largest batch size), `metric_drop` (task
metric drop, in the gate's unit), `min_rps` (rows per second) and `cost_per_1k`.

The reference is the table's first row (`role: reference`, its latency from the first gate run).
Every build also gets its file size, its peak memory (a child process per build,
`guards._memory`), its own hourly price (`parse_prices`) and its throughput at the latency SLO
(`throughput_at_slo`); `store_settings` writes all of it to the registry in one step.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from guards import _latency as latency
from guards._candidate_row import CandidateRow, SloThroughput
from guards._candidate_settings import SettingsTarget, settings_targets, store_settings
from guards._feeds import build_feeds
from guards._memory import MemoryUse, peak_memory
from guards._runtime import open_session, select_providers, session_options, signature
from guards.gate import GateRequest, run_gate
from guards.policy import preset as preset_policy
from guards.results import Criterion, GuardVerdict, LatencyStats
from monitor.errors import InputError
from monitor.slo.evaluate import cost_per_1k

__all__ = [
    "SLO_KEYS",
    "CandidateRow",
    "SettingsTarget",
    "SloThroughput",
    "compare_candidates",
    "parse_prices",
    "parse_slo",
    "peak_memories",
    "settings_targets",
    "store_settings",
    "throughput_at_slo",
]

SLO_KEYS = ("latency_p95_ms", "latency_p99_ms", "metric_drop", "min_rps", "cost_per_1k")


def throughput_at_slo(stats: Sequence[LatencyStats], slo_ms: float) -> SloThroughput | None:
    """The largest batch size whose p95 meets `slo_ms`, with every smaller one meeting it too.

    Latency grows with the batch size, so a larger batch that meets the SLO after a smaller
    one missed it is noise, not capacity: the search stops at the first miss. None when even
    the smallest batch misses."""
    best = None
    for s in sorted(stats, key=lambda s: s.batch_size):
        if s.p95_ms > slo_ms:
            break
        best = SloThroughput(s.batch_size, s.rows_per_s, s.p95_ms, slo_ms)
    return best


def parse_slo(items: Sequence[str]) -> dict[str, float]:
    """`--slo key=value` items; InputError naming an unknown key or a bad number."""
    out: dict[str, float] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or key not in SLO_KEYS:
            raise InputError(f"--slo {item!r}: expected KEY=NUMBER with KEY one of "
                             f"{', '.join(SLO_KEYS)}")  # fmt: skip
        try:
            out[key] = float(text)
        except ValueError:
            raise InputError(f"--slo {item!r}: {text!r} is not a number") from None
    return out


def parse_prices(items: Sequence[str], names: Sequence[str]) -> dict[str, float]:
    """`--hourly-price` items as each build's price: `DOLLARS` for every build, `NAME=DOLLARS`
    for one (its file name or stem, or `reference`); a named price wins. `names` are the builds'
    file names. InputError naming the flag for an unknown name or a bad number."""
    default: float | None = None
    named: dict[str, float] = {}
    for item in items:
        name, sep, text = item.rpartition("=")
        price = _price(item, text)
        if not sep:
            default = price
            continue
        key = _build_name(name.strip(), names)
        if key is None:
            raise InputError(f"--hourly-price {item!r}: {name.strip()!r} is not a build; expected "
                             f"one of reference, {', '.join(names)}")  # fmt: skip
        named[key] = price
    out = {n: default for n in names if default is not None}
    return {**out, **named}


def _price(item: str, text: str) -> float:
    try:
        price = float(text)
    except ValueError:
        price = math.nan
    if not (math.isfinite(price) and price > 0):
        raise InputError(f"--hourly-price {item!r}: {text!r} is not a positive number")
    return price


def _build_name(name: str, names: Sequence[str]) -> str | None:
    """A build's file name from its file name, stem or `reference` (the first of `names`)."""
    if name == "reference":
        return names[0]
    return next((n for n in names if name in (n, Path(n).stem)), None)


def compare_candidates(
    base: GateRequest,
    candidates: Sequence[tuple[Path, str]],
    slo: Mapping[str, float],
    prices: Mapping[str, float] | float | None = None,
    replicas: int = 1,
    latency_slo_ms: float | None = None,
    memory: bool = True,
) -> list[CandidateRow]:
    """Gate and measure each (candidate path, preset) against `base.reference`; the reference's
    own row first. `prices`: per build file name (or one for all); `latency_slo_ms`: the p95
    bound throughput-at-SLO is judged by (default: `slo["latency_p95_ms"]`); `memory`: measure
    each build's peak memory in a child process."""
    if not base.latency_batch_sizes or not candidates:
        raise InputError("compare needs at least one candidate and one latency batch size")
    paths = [base.reference, *(p for p, _ in candidates)]
    price = _prices(prices, [p.name for p in paths])
    bound = latency_slo_ms if latency_slo_ms is not None else slo.get("latency_p95_ms")
    used = peak_memories(base, paths) if memory else [None] * len(paths)
    rows: list[CandidateRow] = []
    for path, name in candidates:
        policy = preset_policy(name)
        if policy.max_metric_drop is None:
            # Every candidate reports its task metric; 100 points is a drop no metric exceeds.
            policy = policy.with_overrides({"max_metric_drop": slo.get("metric_drop", 100.0)})
        verdict = run_gate(replace(base, candidate=path, policy=policy))
        if not rows:
            rows.append(
                _row(base.reference, None, verdict, slo, price.get(paths[0].name), replicas)
            )
        rows.append(_row(path, name, verdict, slo, price.get(path.name), replicas))
    return [_measured(r, p, m, bound) for r, p, m in zip(rows, paths, used, strict=True)]


def _prices(prices: Mapping[str, float] | float | None, names: Sequence[str]) -> dict[str, float]:
    if prices is None:
        return {}
    if isinstance(prices, int | float):
        return dict.fromkeys(names, float(prices))
    return dict(prices)


def _measured(row: CandidateRow, path: Path, mem: MemoryUse | None,
              bound: float | None) -> CandidateRow:  # fmt: skip
    at_slo = throughput_at_slo(row.latency, bound) if bound is not None else None
    return replace(row, file_bytes=os.path.getsize(path), memory=mem, at_slo=at_slo)


def peak_memories(base: GateRequest, paths: Sequence[Path]) -> list[MemoryUse | None]:
    """Each build's peak memory, run on the largest latency batch of the golden feeds."""
    providers = select_providers(base.providers)
    session = open_session(base.reference, providers, session_options(base.intra_op_threads))
    feeds = build_feeds(base.golden, signature(session))
    del session
    batch = latency.batch(feeds, max(base.latency_batch_sizes))
    return peak_memory(paths, batch, providers, base.intra_op_threads)


def _metric(verdict: GuardVerdict) -> Criterion | None:
    return next((c for c in verdict.criteria
                 if c.name.startswith("metric_drop:") and c.slice is None), None)  # fmt: skip


def _row(path: Path, name: str | None, verdict: GuardVerdict, slo: Mapping[str, float],
         hourly_price: float | None, replicas: int) -> CandidateRow:  # fmt: skip
    """A candidate's row (`name`: its preset), or the reference's (`name` None) from the
    reference side of a candidate's verdict."""
    reference = name is None
    stats = verdict.latency.get("reference" if reference else "candidate", ())
    top = stats[-1]
    cost = cost_per_1k(hourly_price, replicas, top.rows_per_s) if hourly_price else None
    metric = _metric(verdict)
    drop = None if metric is None else 0.0 if reference else metric.value
    value = None if metric is None else metric.reference if reference else metric.candidate
    return CandidateRow(
        candidate=path.name,
        preset=name,
        verdict="reference" if reference else verdict.verdict,
        metric=metric.name.split(":", 1)[1] if metric is not None else None,
        reference_metric=metric.reference if metric is not None else None,
        candidate_metric=value,
        metric_drop=drop,
        latency=tuple(stats),
        cost_per_1k=cost,
        missed=_missed(slo, top, drop, cost),
        role="reference" if reference else "candidate",
        hourly_price=hourly_price,
    )


def _missed(slo: Mapping[str, float], top: LatencyStats, drop: float | None,
            cost: float | None) -> tuple[str, ...]:  # fmt: skip
    observed: dict[str, float | None] = {
        "latency_p95_ms": top.p95_ms, "latency_p99_ms": top.p99_ms, "metric_drop": drop,
        "cost_per_1k": cost,
    }  # fmt: skip
    return tuple(key for key, bound in slo.items()
                 if _misses(key, bound, observed, top.rows_per_s))  # fmt: skip


def _misses(key: str, bound: float, observed: Mapping[str, float | None], rps: float) -> bool:
    """Whether one SLO is missed: a floor for `min_rps`, a ceiling otherwise (unknown misses)."""
    if key == "min_rps":
        return rps < bound
    value = observed[key]
    return value is None or value > bound
