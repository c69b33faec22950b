"""Seeds a database through the project's own write paths, for the dashboards' SQL evidence.

Registry with optimization settings (guards.registry), drift, outcome and estimated results
(monitor.results.store), gate runs (guards.history.record_gate), alert states and notifications
(alerts.Evaluator), a scheduled replay (its `run.trigger`), a scheduled canary evaluation judged
per slice (monitor.canary.store_judgement), ingest (collectors' Ingestor fed by the JSONL file
source, with malformed lines as dead letters, latencies and errors) and SLO rows
(monitor.evaluation.windows, as the evaluate job stores them).
Everything lands in the hours before `now`, so one dashboard time range covers it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import httpx
import orjson
from sqlalchemy.engine import Engine

from alerts import DeliveryWorker, Evaluator, Signal
from collectors._base import RawRecord
from collectors._files import JsonlSource
from collectors._ingest import Ingestor
from collectors.runner import RunState, pump
from guards.history import record_gate
from guards.registry import optimization_settings, register_version
from guards.results import Criterion, GuardVerdict, LatencyStats
from monitor.canary import CanaryCriterion, CanaryJudgement, JudgedCriterion, store_judgement
from monitor.config import CollectConfig, FairnessConfig, ModelConfig
from monitor.config.alerts import AlertsConfig
from monitor.config.segments import SegmentCheckConfig
from monitor.config.serving import CostConfig, SloConfig
from monitor.config.shadow import ShadowConfig
from monitor.detectors import DriftResult
from monitor.evaluation.periods import PERIODS, period_of
from monitor.evaluation.windows import WindowEvaluator
from monitor.fairness import GroupCounts, evaluate_fairness
from monitor.outcomes._base import OutcomeResult
from monitor.results.store import (
    store_drift_results,
    store_estimated_results,
    store_fairness_windows,
    store_outcome_results,
    store_period_results,
)
from monitor.segments import (
    Segment,
    SegmentReport,
    mark_persistence,
    segment_history,
    store_segments,
)
from monitor.storage import transaction

MODEL, VERSION = "fraud", "3"
# generative: the seeded events also carry a time to first token (the token-times panel)
MODELS = [ModelConfig(name=MODEL, slices=["region"], generative=True)]
HOURS = 6


def _drift(hour: int, column: str, region: str | None) -> DriftResult:
    value = 0.05 * hour if column == "amount" else 0.05
    return DriftResult(
        column=column, slice=None if region is None else {"region": region},
        kind="numeric", method="psi", value=value, threshold=0.2, p_value=None,
        n_reference=5000, n_current=800, status="drift" if value > 0.2 else "ok",
    )  # fmt: skip


# The one-sided level each slice's decision is stored with (as Holm gives a family of three).
LEVELS = {None: 0.025 / 3, "eu": 0.025 / 2, "us": 0.025}


def _outcome(hour: int, region: str | None) -> OutcomeResult:
    value = 0.9 - 0.01 * hour
    return OutcomeResult(
        metric="accuracy", slice=None if region is None else {"region": region}, value=value,
        ci_low=value - 0.02, ci_high=value + 0.02, baseline_value=0.9, tolerance=0.03, n=800,
        status="degraded" if value < 0.87 else "ok", level=LEVELS[region],
    )  # fmt: skip


def seed_results(engine: Engine, t0: datetime) -> None:
    """Hourly windows of drift (two columns) and accuracy, overall and per region."""
    for hour in range(HOURS):
        window = (t0 + timedelta(hours=hour), t0 + timedelta(hours=hour + 1))
        slices = [None, "eu", "us"]
        drift = [_drift(hour, c, r) for c in ("amount", "country") for r in slices]
        store_drift_results(engine, MODEL, VERSION, window, drift)
        store_outcome_results(engine, MODEL, VERSION, window, [_outcome(hour, r) for r in slices])
        store_estimated_results(engine, MODEL, VERSION, window, _estimated(hour))
    # The day and the week holding the hours, one merged comparison each (as the evaluate job
    # stores them): the day drifted in `amount`, the week did not.
    with transaction(engine) as s:
        for name, size in PERIODS.items():
            p = period_of(t0, size)
            hour = HOURS if name == "day" else 1
            ident = (MODEL, VERSION, name)
            drift = [_drift(hour, c, r) for c in ("amount", "country") for r in (None, "eu", "us")]
            store_period_results(s, "drift", ident, (p.start, p.end), drift)
            outcomes = [_outcome(hour, r) for r in (None, "eu", "us")]
            store_period_results(s, "outcome", ident, (p.start, p.end), outcomes)


def _estimated(hour: int) -> list[dict[str, object]]:
    """Estimated accuracy (realized for the first hours: labels come late) and the mean
    reconstruction error, overall and per region; both degrade in the last hours."""
    out: list[dict[str, object]] = []
    for key in ("", '{"region":"eu"}', '{"region":"us"}'):
        value = 0.9 - 0.02 * hour
        out.append({"slice_key": key, "metric": "accuracy", "value": value,
                    "ci_low": value - 0.03, "ci_high": value + 0.03,
                    "realized": value + 0.01 if hour < 3 else None, "threshold_low": 0.85,
                    "threshold_high": None, "n": 800,
                    "status": "degraded" if value < 0.85 else "ok"})  # fmt: skip
        error = 1.0 + 0.1 * hour
        out.append({"slice_key": key, "metric": "reconstruction_error", "value": error,
                    "ci_low": None, "ci_high": None, "realized": None, "threshold_low": 0.9,
                    "threshold_high": 1.35, "n": 800,
                    "status": "drift" if error > 1.35 else "ok"})  # fmt: skip
    return out


def _verdict(
    verdict: str, flip_rate: float, candidate_p95: float, trigger: str | None = None
) -> GuardVerdict:
    status = "pass" if verdict == "pass" else "fail"
    criteria = (
        Criterion("flip_rate[scores]", flip_rate, 0.01, status),
        Criterion("flip_rate[scores]", flip_rate * 2, 0.03, "pass", {"region": "eu"}),
        Criterion("latency_p95_ms[batch=1]", candidate_p95, 10.0, "pass"),
    )
    latency = {
        "reference": (LatencyStats(1, 2.0, 4.0, 5.0, 500.0), LatencyStats(32, 9, 12, 14, 3000)),
        "candidate": (LatencyStats(1, 1.0, candidate_p95, 3.0, 900.0),),
    }
    return GuardVerdict(
        verdict=verdict, preset="int8", rows=256,  # type: ignore[arg-type]
        providers={"reference": ("CPUExecutionProvider",), "candidate": ("CPUExecutionProvider",)},
        criteria=criteria, outputs={}, latency=latency, timing={"load_s": 0.5, "inference_s": 1.5},
        run={} if trigger is None else {"trigger": trigger},
    )  # fmt: skip


def seed_registry_and_gates(engine: Engine, tmp: Path) -> None:
    """Register the model version and record a passing and a failing gate run."""
    artifacts = []
    for name in ("reference.onnx", "candidate.onnx", "golden.parquet"):
        (tmp / name).write_bytes(name.encode())
        artifacts.append(tmp / name)
    settings = optimization_settings(
        precision="int8", quantization="static qdq, 512 calibration rows",
        batching="max 64, 5 ms", runtime="ort 1.31 CUDA", meta={"image": "serve:1.4"},
    )  # fmt: skip
    # The version is the candidate: a gate run is recorded only for its registered content.
    register_version(engine, MODEL, VERSION, artifacts[1], activate=True, settings=settings)
    ref, cand, golden = artifacts
    scheduled = _verdict("pass", 0.003, 2.6, trigger="schedule")  # the daemon's replay
    record_gate(engine, MODEL, VERSION, scheduled, (ref, cand, golden))
    record_gate(engine, MODEL, VERSION, _verdict("pass", 0.002, 2.5), (ref, cand, golden))
    record_gate(engine, MODEL, VERSION, _verdict("fail", 0.04, 3.5), (ref, cand, golden))


def seed_canary(engine: Engine, t0: datetime) -> None:
    """A scheduled canary evaluation of VERSION against version 2: the whole traffic and
    region=us pass, region=eu fails its prediction distribution."""

    def judged(key: str, status: str) -> JudgedCriterion:
        failed = status == "fail"
        c = CanaryCriterion(
            "prediction", "fail" if failed else "ok", 0.3 if failed else 0.02, None, 0.1, 400, 400,
            p_value=1e-6 if failed else 0.4,
        )  # fmt: skip
        return JudgedCriterion(key, c, c.p_value)

    until = t0 + timedelta(hours=HOURS - 1)
    judgement = CanaryJudgement(
        MODEL, VERSION, "2", until - timedelta(hours=1), until, "holm", 0.05, "fail",
        (judged("", "ok"), judged('{"region":"eu"}', "fail"), judged('{"region":"us"}', "ok")),
    )  # fmt: skip
    store_judgement(engine, judgement)


def seed_alerts(engine: Engine, t0: datetime) -> None:
    """A drift alert that goes pending, fires, and resolves; its notifications are queued."""
    config = AlertsConfig.model_validate(
        {
            "receivers": [{"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/h"}],
            "rules": [
                {"name": "FeatureDrift", "kind": "drift", "for": "30m", "receivers": ["hook"],
                 "annotations": {"summary": "{column} drifted"}},
            ],
        }
    )  # fmt: skip
    evaluator = Evaluator(engine, config)
    labels = {"model": MODEL, "version": VERSION, "column": "amount", "slice": ""}
    for minutes, firing in ((0, True), (45, True), (50, True), (120, False), (125, False)):
        now = t0 + timedelta(hours=1, minutes=minutes)
        signal = Signal("drift", labels, 0.3 if firing else 0.1, 0.2, firing, now)
        evaluator.evaluate([signal], now)
    # Nothing listens on port 9: every delivery attempt fails and is recorded as such.
    with httpx.Client(timeout=2) as client:
        DeliveryWorker(engine, config, client).run_once(t0 + timedelta(hours=2, minutes=10))


def seed_ingest(engine: Engine, tmp: Path, t0: datetime) -> None:
    """Events over several hourly windows from a JSONL log, two malformed lines among them."""
    lines = []
    for i in range(120):
        event = {
            "request_id": f"r{i}", "model": MODEL, "model_version": VERSION,
            "timestamp": (t0 + timedelta(minutes=3 * i)).timestamp(),
            "features": {"amount": float(i % 50)}, "prediction": 0.5,
            "metadata": {"region": ["eu", "us"][i % 2]},
            "latency_ms": 10.0 + i % 20, "error": "timeout" if i % 40 == 0 else None,
            "queue_ms": 2.0, "model_ms": 5.0 + i % 20,  # stage timings (mw_latency)
            "gpu_utilization_percent": 40.0 + i % 50,  # a resource sample (mw_measures)
            "ttft_ms": 100.0 + i % 10,
        }  # fmt: skip
        lines.append(orjson.dumps(event))
    lines[10:10] = [b"{not json", b'{"model": "fraud"}']
    log = tmp / "serving.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    ingestor = Ingestor(engine, "logs", "jsonl", MODELS, CollectConfig(batch_size=50))
    source = JsonlSource("logs", str(log), ingestor.positions, batch_size=50, poll_interval=0.01)
    try:
        pump(source, ingestor, RunState(), until_caught_up=True)
    finally:
        source.close()


def seed_slo(engine: Engine) -> None:
    """SLO rows of the ingested windows, stored by the evaluate job as `serve` runs it."""
    slo = SloConfig(latency_p95_ms=25, latency_p99_ms=40, error_rate=0.01, min_events=10,
                    cost_per_1k=CostConfig(hourly_price=0.7, replicas=2, max=200))  # fmt: skip
    model = ModelConfig(name=MODEL, slices=["region"], slo=slo)
    WindowEvaluator(engine, [model], 3600).run()


def seed_shadow(engine: Engine, t0: datetime) -> None:
    """Paired shadow mode: VERSION shadows version 2 over two hours, flipping every 5th."""
    model = ModelConfig(name=MODEL, slices=["region"], shadow=ShadowConfig())
    ingestor = Ingestor(engine, "shadow", "kafka", [model], CollectConfig())
    events = []
    for i in range(40):
        base = {
            "request_id": f"s{i}", "model": MODEL, "features": {"amount": float(i)},
            "timestamp": (t0 + timedelta(minutes=3 * i)).timestamp(),
            "metadata": {"region": ["eu", "us"][i % 2]},
        }  # fmt: skip
        events.append({**base, "model_version": "2", "role": "primary", "prediction": 0.2})
        flipped = 0.8 if i % 5 == 0 else 0.3
        events.append({**base, "model_version": VERSION, "role": "shadow", "prediction": flipped})
    records = [RawRecord("p0", i, i + 1, orjson.dumps(e)) for i, e in enumerate(events)]
    ingestor.ingest(records)


def seed_fairness(engine: Engine, t0: datetime) -> None:
    """Fairness by region in the last hour: eu selected at 0.2, us at 0.5 (a violation)."""

    groups = {
        "eu": GroupCounts(tp=60, fp=20, tn=300, fn=20, score_sum=120.0, scored=400, selected=80),
        "us": GroupCounts(tp=150, fp=50, tn=180, fn=20, score_sum=190.0, scored=400, selected=200),
    }
    results = evaluate_fairness({"region": groups}, FairnessConfig(attributes=["region"]))
    window = (t0 + timedelta(hours=HOURS - 1), t0 + timedelta(hours=HOURS))
    store_fairness_windows(engine, MODEL, VERSION, [(window, results)])


def seed_segments(engine: Engine, t0: datetime) -> None:
    """Two runs of the segment check `errors`: region=eu AND age = [60, inf) in both (then
    persisting), device = ios in the second only (new)."""
    check = SegmentCheckConfig(name="errors", model=MODEL, label="label", prediction="pred",
                               current={"path": "scored.parquet"})  # fmt: skip

    def segment(preds: list[tuple[str, str]], effect: float) -> Segment:
        return Segment(preds, 400, 0.04, 0.3 + effect, 0.3, effect, effect - 0.05,
                       effect + 0.05, 1e-9, 1e-7, 1.5)  # fmt: skip

    weak = segment([("region", "eu"), ("age", "[60, inf)")], 0.25)
    for hour, found in (
        (HOURS - 3, [weak]),
        (HOURS - 2, [weak, segment([("device", "ios")], 0.1)]),
    ):
        report = SegmentReport("error_rate", 10_000, 0.05, ["region", "age", "device"], 100, 3,
                               0.05, 800, 40, 12, found)  # fmt: skip
        previous = segment_history(engine, "errors")
        doc = mark_persistence(report, previous[0] if previous else None)
        store_segments(engine, check, doc, t0 + timedelta(hours=hour))


def seed_all(engine: Engine, tmp: Path, now: datetime) -> datetime:
    """Seed everything; returns t0, the start of the seeded hours."""
    t0 = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=HOURS)
    seed_registry_and_gates(engine, tmp)
    seed_results(engine, t0)
    seed_alerts(engine, t0)
    seed_ingest(engine, tmp, t0)
    seed_slo(engine)
    seed_shadow(engine, t0)
    seed_canary(engine, t0)
    seed_fairness(engine, t0)
    seed_segments(engine, t0)
    return t0
