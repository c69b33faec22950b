"""Demo step: gate each optimized build against the reference, with registry and rollback."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import Engine

from alerts import Evaluator
from guards import (
    gate_request,
    load_golden,
    record_gate,
    register_version,
    run_gate,
)
from guards.reports import render_html, render_markdown
from monitor.app.daemon.signals import guard_signals
from monitor.config import Config
from monitor.storage import RollbackEvent, session_factory, utcnow

# candidate key in monitor.app.demo._models.fraud_suite -> (registry version, preset)
CANDIDATES = {
    "fp16": ("2-fp16", "fp16"),
    "int8_good": ("3-int8", "int8"),
    "int8_bad": ("4-int8-miscalibrated", "int8"),
}


@dataclass(frozen=True)
class GateOutcome:
    """One candidate's gate result and the reports written for it."""

    candidate: str
    version: str
    verdict: str
    action: str
    reports: list[Path]


def run_candidate(
    engine: Engine, config: Config, models: dict[str, Path], golden: Path, key: str, out: Path
) -> GateOutcome:
    """Register the candidate as the active canary, gate it, record it and notify on failure."""
    version, preset_name = CANDIDATES[key]
    register_version(engine, "fraud", version, models[key], auto_rollback=True, activate=True)
    request = gate_request(
        models["reference"],
        models[key],
        load_golden(golden, id_column="id", label_column="label", slice_by=("segment", "region")),
        config.guards,
        preset_name,
        latency_batch_sizes=(64,),
    )
    verdict = run_gate(request)
    record = record_gate(
        engine, "fraud", version, verdict, (models["reference"], models[key], golden)
    )
    doc = verdict.to_dict()
    html, md = out / f"gate-{key}.html", out / f"gate-{key}.md"
    html.write_text(render_html(doc), encoding="utf-8")
    md.write_text(render_markdown(doc), encoding="utf-8")
    now = utcnow()  # the signals the daemon's own tick would make of the stored runs
    Evaluator(engine, config.alerts).evaluate(
        guard_signals(engine, ["fraud"], now), now, kinds=("guard",)
    )
    return GateOutcome(key, version, verdict.verdict, record.action, [html, md])


def rollbacks(engine: Engine) -> list[dict[str, str]]:
    """Every recorded rollback as {model, from, to}."""
    with session_factory(engine)() as s:
        rows = s.scalars(select(RollbackEvent).order_by(RollbackEvent.id)).all()
        return [{"model": r.model, "from": r.from_version, "to": r.to_version} for r in rows]
