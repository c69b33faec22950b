"""A declared canary pair judged overall and per slice, with one correction over all the tests.

Each criterion of `analyze_canary` is judged on the whole traffic and again in each slice of
the model's `slices` (the slices with the most stable traffic first, `max_slices` of them), so a
regression confined to `region=eu` fails the canary even when the whole passes.

Judging many slices multiplies the chances of a false failure, so the p-values of every tested
criterion (distributions, error rate) of the evaluation — overall and every slice together —
are adjusted at once (`correction`): Benjamini–Hochberg keeps the expected share of false
failures among the failures at most `level` (independent or positively dependent tests, as
overlapping slices of one traffic are), Holm keeps the chance of any false failure at most
`level` under any dependence. A tested criterion fails only when it fails its own test AND its
adjusted p-value is below `level`: the correction removes failures, never adds them. Bounds
without a test (latency ratios, an SLO, outcome-metric tolerances) judge the point values on
the minimum evidence (`canary.min_events`, `canary.min_labels`) and are not adjusted.

The verdict is `fail` when any criterion fails anywhere; else `inconclusive` when a criterion
of the whole traffic lacks evidence (a quiet slice does not make the verdict inconclusive);
else `pass`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from monitor.canary._analysis import CanaryReport, CanaryVerdict, criteria_of, verdict_of
from monitor.canary._criteria import CanaryCriterion
from monitor.canary._evidence import Evidence, load_sliced_evidence
from monitor.config import CanaryPairConfig, ModelConfig
from monitor.detectors import adjust_p_values
from monitor.profiles import OVERALL, slice_label
from monitor.storage import CanaryRun, session_factory, transaction

# Evidence of one version over one range, by slice key (a tick's cache shares it across pairs).
EvidenceOf = Callable[[str], dict[str, Evidence]]


@dataclass(frozen=True)
class JudgedCriterion:
    """A criterion of one slice ("" is the whole traffic) after the correction."""

    slice_key: str
    criterion: CanaryCriterion
    p_adjusted: float | None

    def to_dict(self) -> dict[str, Any]:
        """The criterion's API fields plus its raw and adjusted p-values."""
        c = self.criterion
        return {**c.to_dict(), "p_value": c.p_value, "p_adjusted": self.p_adjusted}


@dataclass(frozen=True)
class CanaryJudgement:
    """One evaluation of a declared pair: every criterion overall and per slice, judged."""

    model: str
    canary: str
    stable: str
    since: datetime
    until: datetime
    correction: str
    level: float
    verdict: CanaryVerdict
    judged: tuple[JudgedCriterion, ...]

    @property
    def failed(self) -> tuple[JudgedCriterion, ...]:
        return tuple(j for j in self.judged if j.criterion.status == "fail")

    def slice_keys(self) -> list[str]:
        """The judged slices, the whole traffic ("") first."""
        return list(dict.fromkeys(j.slice_key for j in self.judged))

    def report(self) -> CanaryReport:
        """The whole traffic's criteria under the pair's verdict, as `analyze_canary` reports
        (what `canary.action` acts on)."""
        overall = tuple(j.criterion for j in self.judged if j.slice_key == OVERALL)
        return CanaryReport(self.model, self.canary, self.stable, self.since, self.until,
                            self.verdict, overall)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The stored document: the live report's keys, plus slices and how they were judged."""
        slices = []
        for key in self.slice_keys():
            mine = [j for j in self.judged if j.slice_key == key]
            verdict = verdict_of(tuple(j.criterion for j in mine))
            slices.append({"slice": slice_label(key) or "all", "slice_key": key, "verdict": verdict,
                           "criteria": [j.to_dict() for j in mine]})  # fmt: skip
        return {
            "model": self.model,
            "canary": self.canary,
            "baseline": self.stable,
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "verdict": self.verdict,
            "criteria": slices[0]["criteria"] if slices and not slices[0]["slice_key"] else [],
            "correction": self.correction,
            "level": self.level,
            "failed": len(self.failed),
            "slices": slices,
        }


def judge_pair(
    pair: CanaryPairConfig,
    cfg: ModelConfig,
    stable: dict[str, Evidence],
    canary: dict[str, Evidence],
    since: datetime,
    until: datetime,
) -> CanaryJudgement:
    """Judge the pair on both versions' evidence by slice (`load_sliced_evidence`)."""
    keys = [OVERALL, *_busiest(stable, pair.max_slices)]
    empty = Evidence(pair.canary)
    raw = [
        (key, c)
        for key in keys
        if key in stable
        for c in criteria_of(stable[key], canary.get(key, empty), cfg)
    ]
    judged = correct(raw, pair.correction, pair.level)
    return CanaryJudgement(pair.model, pair.canary, pair.stable, since, until, pair.correction,
                           pair.level, _verdict(judged), tuple(judged))  # fmt: skip


def _busiest(stable: dict[str, Evidence], limit: int) -> list[str]:
    """Slice keys by the stable version's traffic, most first, at most `limit`."""

    def traffic(key: str) -> int:
        ev = stable[key]
        return ev.serving.requests or max((p.n for p in ev.profiles.values()), default=0)

    keys = sorted((k for k in stable if k != OVERALL), key=lambda k: (-traffic(k), k))
    return keys[:limit]


def correct(
    raw: Iterable[tuple[str, CanaryCriterion]], method: str, level: float
) -> list[JudgedCriterion]:
    """Adjust the p-values of every tested criterion together; a failed one stays failed only
    below `level` after adjustment (or when it breaches a bound, as the error-rate SLO)."""
    items = list(raw)
    tested = [i for i, (_, c) in enumerate(items) if c.p_value is not None]
    adjusted = dict(
        zip(tested, adjust_p_values([items[i][1].p_value or 0.0 for i in tested], method),
            strict=True)
    )  # fmt: skip
    out = []
    for i, (key, c) in enumerate(items):
        q = adjusted.get(i)
        if q is not None and c.status == "fail" and q >= level and not _over_bound(c):
            c = replace(c, status="ok", detail=f"{c.detail}; adjusted p {q:.3g} ≥ {level:g}")
        out.append(JudgedCriterion(key, c, q))
    return out


def _over_bound(c: CanaryCriterion) -> bool:
    """The error rate above its SLO fails without a test."""
    return (
        c.name == "error_rate" and c.threshold is not None and c.canary is not None
        and c.canary > c.threshold
    )  # fmt: skip


def _verdict(judged: list[JudgedCriterion]) -> CanaryVerdict:
    if any(j.criterion.status == "fail" for j in judged):
        return "fail"
    overall = tuple(j.criterion for j in judged if j.slice_key == OVERALL)
    return verdict_of(overall)


def evaluate_pair(
    engine: Engine,
    pair: CanaryPairConfig,
    cfg: ModelConfig,
    since: datetime,
    until: datetime,
    evidence: EvidenceOf | None = None,
) -> CanaryJudgement:
    """Read both versions' summaries of [since, until) and judge the pair (`evidence`: a
    version's sliced evidence, e.g. cached across the pairs of one tick)."""
    load = evidence or (lambda v: load_sliced_evidence(engine, cfg, v, since, until))
    return judge_pair(pair, cfg, load(pair.stable), load(pair.canary), since, until)


def store_judgement(engine: Engine, judgement: CanaryJudgement, action: str | None = None) -> int:
    """Append the judgement (and what its action did) to the pair's history; the row's id."""
    report = judgement.to_dict()
    if action is not None:
        report["action"] = action
    with transaction(engine) as s:
        row = CanaryRun(
            model=judgement.model, canary=judgement.canary, stable=judgement.stable,
            since=judgement.since, until=judgement.until, verdict=judgement.verdict,
            failed=len(judgement.failed), correction=judgement.correction,
            report=report, evaluated_at=judgement.until,
        )  # fmt: skip
        s.add(row)
        s.flush()
        return int(row.id)


def canary_history(
    engine: Engine, model: str, canary: str, stable: str | None = None, limit: int = 1
) -> list[CanaryRun]:
    """The newest stored runs of a pair (any stable version when None), newest first."""
    t = CanaryRun
    stmt = select(t).where(t.model == model, t.canary == canary)
    if stable is not None:
        stmt = stmt.where(t.stable == stable)
    stmt = stmt.order_by(t.evaluated_at.desc(), t.id.desc()).limit(limit)
    with session_factory(engine)() as s:
        return list(s.scalars(stmt))
