"""Canary analysis: a canary version's live windows against the stable version's.

Both versions are read over the same range [since, now): prediction distribution and each
feature (on the stable version's specs), latency p95/p99 (ratio and SLO), the tail of each
measure canaries judge (time to first token, time per output token, tokens per second), error rate
(two-proportion test) and outcome metrics where labels exist. The verdict is `fail` when any
criterion fails, else `inconclusive` when any lacks evidence, else `pass`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy.engine import Engine

from monitor.canary import _criteria as c
from monitor.canary._evidence import Evidence, load_evidence
from monitor.common.measures import MEASURES
from monitor.config import ModelConfig, parse_duration
from monitor.errors import InputError, NotFoundError
from monitor.summaries import window_of

CanaryVerdict = Literal["pass", "fail", "inconclusive"]


@dataclass(frozen=True)
class CanaryReport:
    """The verdict of one canary analysis and the criteria that decided it."""

    model: str
    canary: str
    baseline: str
    since: datetime
    until: datetime
    verdict: CanaryVerdict
    criteria: tuple[c.CanaryCriterion, ...]

    @property
    def failed(self) -> tuple[c.CanaryCriterion, ...]:
        return tuple(x for x in self.criteria if x.status == "fail")

    def to_dict(self) -> dict[str, Any]:
        """The document the API serves and `modelwatch canary --json` writes."""
        return {
            "model": self.model,
            "canary": self.canary,
            "baseline": self.baseline,
            "since": self.since.isoformat(),
            "verdict": self.verdict,
            "criteria": [x.to_dict() for x in self.criteria],
        }


def analyze_canary(
    engine: Engine,
    cfg: ModelConfig,
    canary: str,
    baseline: str,
    since: datetime,
    until: datetime,
    window_s: float,
) -> CanaryReport:
    """Compare `canary`'s windows from the one holding `since` up to `until` with `baseline`'s
    windows of the same range."""
    if canary == baseline:
        raise InputError(f"canary and baseline are both version {canary!r}; give two versions")
    if since >= until:
        raise InputError(f"since: {since.isoformat()} is not before {until.isoformat()}")
    since = window_of(since, window_s)
    stable = load_evidence(engine, cfg, baseline, since, until)
    if not stable.profiles:
        raise NotFoundError(
            f"model {cfg.name!r} version {baseline!r} has no windows since {since.isoformat()}; "
            "nothing to compare the canary with"
        )
    mine = load_evidence(engine, cfg, canary, since, until)
    criteria = criteria_of(stable, mine, cfg)
    return CanaryReport(cfg.name, canary, baseline, since, until, verdict_of(criteria), criteria)


def criteria_of(
    stable: Evidence, canary: Evidence, cfg: ModelConfig
) -> tuple[c.CanaryCriterion, ...]:
    """Every criterion the stable version's evidence supports, predictions first."""
    outputs = sorted(n for n in stable.profiles if n.startswith("prediction"))
    features = sorted(n for n in stable.profiles if not n.startswith("prediction"))
    out = [c.distribution(n, stable.profiles[n], canary.profiles.get(n), cfg) for n in outputs]
    out += [
        c.distribution(f"feature:{n}", stable.profiles[n], canary.profiles.get(n), cfg)
        for n in features
    ]
    slo = cfg.slo
    if stable.serving.latency.n:
        out.append(c.latency(0.95, slo.latency_p95_ms if slo else None, stable, canary, cfg))
        out.append(c.latency(0.99, slo.latency_p99_ms if slo else None, stable, canary, cfg))
    out += [
        c.measure(m, stable, canary, cfg)
        for m in MEASURES.values()
        if m.canary and stable.serving.measure(m.name).n
    ]
    if stable.serving.requests:
        out.append(c.error_rate(stable, canary, cfg))
    out += c.outcomes(stable, canary, cfg)
    return tuple(out)


def since_of(text: str | None, now: datetime, default: timedelta = timedelta(hours=1)) -> datetime:
    """`--since`/`?since=`: a duration back from `now` (`1h`, `90m`) or an RFC 3339 time."""
    if text is None or not text.strip():
        return now - default
    try:
        return now - parse_duration(text.strip())
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            f"since: {text[:64]!r} is neither a duration (1h, 30m) nor an RFC 3339 time"
        ) from None
    if parsed.tzinfo is None:
        raise InputError(f"since: {text[:64]!r} has no UTC offset")
    return parsed


def verdict_of(criteria: tuple[c.CanaryCriterion, ...]) -> CanaryVerdict:
    """fail if any criterion fails; else inconclusive if any lacks evidence; else pass."""
    statuses = {x.status for x in criteria}
    if "fail" in statuses:
        return "fail"
    return "inconclusive" if "insufficient_data" in statuses or not criteria else "pass"
