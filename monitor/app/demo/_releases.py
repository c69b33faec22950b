"""Demo step: what the daemon watches without being asked, one scene each.

- Scheduled golden replay: after the gates, a build is swapped in as the active version without
  one (`5-int8-swapped`, in fact the miscalibrated int8 build); the daemon's hourly `guard:fraud`
  job (its first run comes as the daemon starts) replays it on this host, it fails, and
  `action: rollback` moves `active` back to last-known-good.
- Per-slice canary: the canary pair (`canaries:`) judged by the daemon's canary job over the
  last two hours of traffic, overall and per region; the canary build mis-reads f0 in
  region=eu only, so that slice fails while the whole traffic passes. Its model stage is also
  18 ms slower: its p95 latency criterion explains the rise by the stage that moved
  ("p95 +20 ms, of which model +18 ms"; within the demo's `latency_ratio`).
- Paired shadow mode: in the last hour the good int8 build scores every stable request as a
  shadow; the pairs' flip rate with its interval.
"""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from guards.registry import register_version
from monitor.app.daemon.wiring import CanaryWatch, replica_id
from monitor.app.demo._stream import wait_for
from monitor.app.demo._traffic import CANARY_VERSION, SHADOW_VERSION, TrafficPlan
from monitor.canary import CanaryJudgement
from monitor.config import Config
from monitor.profiles import OVERALL, slice_label
from monitor.shadow import shadow_results
from monitor.storage import GateRun, RollbackEvent, session_factory

MODEL = "fraud"
SWAPPED = "5-int8-swapped"


def scheduled_replays(engine: Engine) -> list[GateRun]:
    """The scheduled replays stored so far (`run.trigger: schedule`), oldest first."""
    with session_factory(engine)() as s:
        runs = s.scalars(select(GateRun).where(GateRun.model == MODEL).order_by(GateRun.id))
        return [r for r in runs if (r.verdict_json.get("run") or {}).get("trigger") == "schedule"]


def swap_in_bad_build(engine: Engine, models: dict[str, Path]) -> None:
    """Register the miscalibrated build under a new name and make it active, ungated."""
    swapped = models["int8_bad"].with_name("fraud_int8_swapped.onnx")
    shutil.copyfile(models["int8_bad"], swapped)
    register_version(engine, MODEL, SWAPPED, swapped, activate=True)


def replay_scene(engine: Engine) -> dict[str, Any]:
    """The scheduled replay's verdict on the swapped build, and the rollback it caused."""

    def replayed() -> list[GateRun]:
        return [r for r in scheduled_replays(engine) if r.version == SWAPPED]

    wait_for(lambda: bool(replayed()), 120, f"the scheduled replay of {SWAPPED}")
    run = replayed()
    with session_factory(engine)() as s:
        back = s.scalars(
            select(RollbackEvent)
            .where(RollbackEvent.model == MODEL, RollbackEvent.from_version == SWAPPED)
            .order_by(RollbackEvent.id.desc())
        ).first()
    return {
        "version": SWAPPED,
        "verdict": run[-1].verdict if run else "not run",
        "replays": len(scheduled_replays(engine)),
        "rolled_back_to": back.to_version if back is not None else None,
    }


def canary_scene(engine: Engine, config: Config, plan: TrafficPlan) -> dict[str, Any]:
    """The canary job's evaluation at the end of the demo's traffic (its clock)."""
    watch = CanaryWatch(engine, config, replica_id())
    pair = next(p for p in config.canaries if p.canary == CANARY_VERSION)
    judgement = watch.evaluate(pair, plan.end)
    report = judgement.to_dict()
    slices = {part["slice"]: part for part in report["slices"]}
    overall = slices.get("all", {})
    return {
        "canary": pair.canary,
        "stable": pair.stable,
        "verdict": judgement.verdict,
        "overall": overall.get("verdict"),
        "failed_slices": sorted(k for k, v in slices.items() if v["verdict"] == "fail"),
        "failed_criteria": sorted(
            f"{j.criterion.name} in {slice_label(j.slice_key) or 'all'}" for j in judgement.failed
        ),
        "correction": judgement.correction,
        "latency": _latency_shift(judgement),
    }


def _latency_shift(judgement: CanaryJudgement) -> str | None:
    """The whole traffic's p95 change and the stage that moved, from its latency criterion."""
    detail = next(
        (j.criterion.detail for j in judgement.judged
         if j.slice_key == OVERALL and j.criterion.name == "latency_p95"),
        "",
    )  # fmt: skip
    return next((part for part in detail.split("; ") if part.startswith("p95 ")), None)


def shadow_scene(engine: Engine, config: Config, plan: TrafficPlan) -> dict[str, Any]:
    """The shadow version's pairs with the stable version over the shadowed hour."""
    cfg = next(m for m in config.models if m.name == MODEL)
    since = plan.start + plan.shadow_from * plan.window
    results = shadow_results(cfg, engine, since, plan.end + timedelta(hours=1))
    whole = next(
        r
        for r in results
        if r.slice_key == OVERALL and r.shadow_version == SHADOW_VERSION and r.primary_version
    )
    return {
        "primary": whole.primary_version,
        "shadow": whole.shadow_version,
        "pairs": whole.pairs,
        "unpaired": whole.unpaired_primary + whole.unpaired_shadow,
        "flip_rate": whole.flip_rate,
        "flip_rate_ci": [whole.flip_rate_low, whole.flip_rate_high],
        "abs_diff_mean": whole.abs_diff_mean,
        "status": whole.status,
    }
