"""`modelwatch demo`: every capability on embedded defaults, end to end, in about a minute.

The summary lists each scene: drift and outcome alerts, the gates and their rollback, and what
the daemon watches without being asked (`monitor.app.demo._releases`): a scheduled golden
replay that catches a swapped bad build and rolls back, a canary failing in one slice while the
whole traffic passes, and a shadow comparison."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy import select
from sqlalchemy.engine import Engine

from guards.registry import register_version
from migrations import upgrade
from monitor.app.daemon.wiring import build_service
from monitor.app.demo._artifacts import drift_report, export_dashboards
from monitor.app.demo._gates import CANDIDATES, GateOutcome, rollbacks, run_candidate
from monitor.app.demo._generative import MODEL as GENERATIVE_MODEL
from monitor.app.demo._generative import generative_scene
from monitor.app.demo._models import fraud_golden, fraud_suite
from monitor.app.demo._receiver import SignedWebhookReceiver
from monitor.app.demo._releases import (
    canary_scene,
    replay_scene,
    shadow_scene,
    swap_in_bad_build,
)
from monitor.app.demo._setup import SECRET_ENV, TOKEN_ENV, create_baseline, demo_config, onnx_scorer
from monitor.app.demo._stream import stream, wait_for
from monitor.app.demo._traffic import Builds, TrafficPlan
from monitor.config import Config
from monitor.config.serving import SloConfig
from monitor.storage import DriftResultRow, OutcomeResultRow, make_engine, session_factory

STEPS = 7


@dataclass
class DemoState:
    """What the steps produce, gathered into summary.json."""

    workdir: Path
    events: int = 0
    labels: int = 0
    gates: list[GateOutcome] = field(default_factory=list)
    releases: dict[str, Any] = field(default_factory=dict)
    reports: list[Path] = field(default_factory=list)
    dashboards: list[Path] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fresh(workdir: Path) -> None:
    for name in ("modelwatch.db", "modelwatch.db-wal", "modelwatch.db-shm"):
        (workdir / name).unlink(missing_ok=True)
    for sub in ("logs", "models", "reports", "dashboards"):
        shutil.rmtree(workdir / sub, ignore_errors=True)
        (workdir / sub).mkdir(parents=True)


def _count_alerts(receiver: SignedWebhookReceiver, name: str) -> int:
    """Firing alerts of rule `name` the receiver verified (one per fingerprint)."""
    seen = {
        a["fingerprint"]
        for payload in receiver.received.verified
        for a in payload["alerts"]
        if a["labels"].get("alertname") == name and a["status"] == "firing"
    }
    return len(seen)


def _has(engine: Engine, table: Any, status: str) -> bool:
    with session_factory(engine)() as s:
        return s.scalar(select(table.id).where(table.status == status).limit(1)) is not None


@contextmanager
def _progress(console: Console) -> Iterator[Callable[[str], None]]:
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("starting", total=STEPS)

        def advance(description: str) -> None:
            progress.update(task, description=description, advance=1)

        yield advance


def run_demo(workdir: Path, console: Console, serve: bool = False) -> dict[str, Any]:
    """Run every step; returns (and writes) the summary."""
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    _fresh(workdir)
    os.environ.setdefault(SECRET_ENV, secrets.token_hex(16))
    os.environ.setdefault(TOKEN_ENV, secrets.token_urlsafe(16))
    state = DemoState(workdir)
    with SignedWebhookReceiver(os.environ[SECRET_ENV]) as receiver, _progress(console) as step:
        summary = _steps(state, receiver, step, console, serve)
    (workdir / "summary.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    _print_summary(console, summary, receiver)
    return summary


def _steps(
    state: DemoState,
    receiver: SignedWebhookReceiver,
    step: Callable[[str], None],
    console: Console,
    serve: bool,
) -> dict[str, Any]:
    wd = state.workdir
    step("building the reference model and fp16/int8 builds")
    models = fraud_suite(wd / "models")
    golden = wd / "models" / "golden.parquet"
    fraud_golden(reference=models["reference"]).to_parquet(golden, index=False)
    step("profiling the training set into a baseline")
    engine = make_engine(f"sqlite:///{wd / 'modelwatch.db'}")
    upgrade(engine)
    register_version(engine, "fraud", "1", models["reference"], activate=True)
    scorer = onnx_scorer(models["reference"])
    baseline = create_baseline(engine, scorer, wd / "training.parquet")
    config = demo_config(wd, receiver.url, baseline, golden)
    _gates(state, engine, config, models, golden, step)
    # After the gates, a bad build is swapped in without one; the daemon's scheduled replay
    # (its first run comes as it starts) catches it while the traffic streams.
    swap_in_bad_build(engine, models)
    service = build_service(config, engine)
    port = free_port()
    server = service.serve_in_background("127.0.0.1", port)
    plan = TrafficPlan()
    try:
        builds = Builds(canary=onnx_scorer(models["fp16"]), shadow=onnx_scorer(models["int8_good"]))
        _traffic(state, engine, scorer, receiver, step, plan, builds)
        if any(g.verdict == "fail" for g in state.gates):
            wait_for(
                lambda: _count_alerts(receiver, "GateFailed") > 0,
                30,
                "the gate failure alert at the webhook receiver",
            )
        step("scheduled replay, canary per slice, shadow pairs")
        state.releases = {
            "replay": replay_scene(engine),
            "canary": canary_scene(engine, config, plan),
            "shadow": shadow_scene(engine, config, plan),
            "generative": generative_scene(
                engine, _slo(config, GENERATIVE_MODEL), plan.start, plan.end
            ),
        }
        _reports(state, engine, config, step)
        if serve:
            _serve_forever(console, port)
    finally:
        service.stop_background(server)
    return _summary(state, engine, receiver)


def _slo(config: Config, model: str) -> SloConfig:
    return next(m.slo for m in config.models if m.name == model and m.slo is not None)


def _traffic(
    state: DemoState,
    engine: Engine,
    scorer: Any,
    receiver: SignedWebhookReceiver,
    step: Callable[[str], None],
    plan: TrafficPlan,
    builds: Builds,
) -> None:
    step("streaming traffic (drift in region=eu from hour 3, a canary, shadow pairs, late labels)")
    state.events, state.labels = stream(
        engine, state.workdir / "logs" / "serving.jsonl", plan, scorer, lambda _w: None, builds
    )
    step("detecting drift and outcome degradation; delivering signed alerts")
    wait_for(lambda: _has(engine, DriftResultRow, "drift"), 60, "drift to be detected")
    wait_for(
        lambda: _has(engine, OutcomeResultRow, "degraded"),
        60,
        "an outcome degradation to be detected",
    )
    wait_for(
        lambda: (
            _count_alerts(receiver, "FeatureDrift") > 0
            and _count_alerts(receiver, "OutcomeDegraded") > 0
        ),
        60,
        "drift and outcome alerts at the webhook receiver",
    )


def _gates(
    state: DemoState,
    engine: Engine,
    config: Config,
    models: dict[str, Path],
    golden: Path,
    step: Callable[[str], None],
) -> None:
    """Gate each build; a failure's alert is delivered once the daemon runs."""
    step("canary gates for the fp16 and int8 builds")
    for key in CANDIDATES:
        outcome = run_candidate(engine, config, models, golden, key, state.workdir / "reports")
        state.gates.append(outcome)
        state.reports += outcome.reports


def _reports(state: DemoState, engine: Engine, config: Config, step: Callable[[str], None]) -> None:
    step("writing HTML reports and Grafana dashboards")
    state.reports.insert(0, drift_report(engine, config, state.workdir / "reports"))
    state.dashboards = export_dashboards(state.workdir / "dashboards")


def _serve_forever(console: Console, port: int) -> None:
    console.print(
        f"\nDaemon and API on http://127.0.0.1:{port} (docs at /docs); admin token: "
        f"{os.environ[TOKEN_ENV]}. Press Ctrl-C to stop."
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        console.print("stopping")


def _summary(state: DemoState, engine: Engine, receiver: SignedWebhookReceiver) -> dict[str, Any]:
    return {
        "events_ingested": state.events,
        "labels_ingested": state.labels,
        "drift_alerts_delivered": _count_alerts(receiver, "FeatureDrift"),
        "outcome_alerts_delivered": _count_alerts(receiver, "OutcomeDegraded"),
        "gate_alerts_delivered": _count_alerts(receiver, "GateFailed"),
        "signatures_rejected": len(receiver.received.rejected),
        "gate": {g.candidate: g.verdict for g in state.gates},
        "rollbacks": rollbacks(engine),
        **state.releases,
        "reports": [str(p) for p in state.reports],
        "dashboards": [str(p) for p in state.dashboards],
    }


def _print_summary(console: Console, summary: dict[str, Any], receiver: Any) -> None:
    table = Table(title="modelwatch demo", show_header=True)
    table.add_column("what")
    table.add_column("result")
    table.add_row("events ingested", str(summary["events_ingested"]))
    table.add_row("labels joined (late)", str(summary["labels_ingested"]))
    table.add_row("drift alerts delivered (signed)", str(summary["drift_alerts_delivered"]))
    table.add_row("outcome alerts delivered", str(summary["outcome_alerts_delivered"]))
    for name, verdict in summary["gate"].items():
        table.add_row(f"gate {name}", verdict)
    for rb in summary["rollbacks"]:
        table.add_row("rollback", f"{rb['model']}: {rb['from']} -> {rb['to']}")
    _print_releases(table, summary)
    table.add_row("reports", str(len(summary["reports"])))
    table.add_row("dashboards", str(len(summary["dashboards"])))
    console.print(table)


def _print_releases(table: Table, summary: dict[str, Any]) -> None:
    replay, canary, shadow = summary["replay"], summary["canary"], summary["shadow"]
    back = replay["rolled_back_to"]
    table.add_row(
        "scheduled replay",
        f"caught {replay['version']} ({replay['verdict']})"
        + (f", rolled back to {back}" if back else ", no rollback"),
    )
    slices = ", ".join(canary["failed_slices"]) or "none"
    table.add_row(
        f"canary {canary['canary']} vs {canary['stable']}",
        f"{canary['verdict']}: failed in {slices}; overall {canary['overall']}",
    )
    if canary["latency"]:
        table.add_row(f"canary {canary['canary']} latency", canary["latency"])
    low, high = shadow["flip_rate_ci"]
    rate = "n/a" if shadow["flip_rate"] is None else f"{shadow['flip_rate']:.2%}"
    interval = "" if low is None or high is None else f" [{low:.2%}, {high:.2%}]"
    table.add_row(
        f"shadow {shadow['shadow']} vs {shadow['primary']}",
        f"{shadow['pairs']} pairs, flip rate {rate}{interval} ({shadow['status']})",
    )
    gen = summary["generative"]
    ttft = gen["ttft_p95_ms"]
    table.add_row(
        f"{gen['model']} TTFT p95 (generative)",
        f"{ttft[0]} .. {ttft[-1]} ms by hour, GPU p95 {gen['gpu_utilization_p95'][-1]}% at "
        f"the end; ttft_p95_ms {gen['ttft_slo_ms']:g} breached in {gen['ttft_breached_windows']}",
    )
