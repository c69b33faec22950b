"""Demo configuration, models and baseline."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine

from monitor.app.daemon.names import registry_names
from monitor.app.demo._generative import MODEL as GENERATIVE_MODEL
from monitor.app.demo._generative import TTFT_SLO_MS
from monitor.app.demo._traffic import CANARY_VERSION, FEATURES, Scorer, training_frame
from monitor.baselines.store import save_baseline
from monitor.config import Config, parse_config
from monitor.outcomes.metrics import accuracy, recall
from monitor.profiles import profile_frame, specs_for

SECRET_ENV = "MODELWATCH_DEMO_WEBHOOK_SECRET"
TOKEN_ENV = "MODELWATCH_DEMO_ADMIN_TOKEN"


def demo_config(
    workdir: Path, receiver_url: str, baseline: dict[str, float], golden: Path
) -> Config:
    """Embedded defaults: SQLite in the workdir, a followed serving log, a local receiver; an
    hourly scheduled golden replay with rollback, a declared canary pair judged per region and
    paired shadow mode (the scenes of `monitor.app.demo._releases`)."""
    return parse_config(
        {
            "database_url": f"sqlite:///{workdir / 'modelwatch.db'}",
            "models": [
                {
                    "name": "fraud",
                    "slices": ["region"],
                    "outcomes": {
                        "metrics": ["accuracy", "recall"],
                        "tolerance": 0.03,
                        "baseline": baseline,
                    },
                    # A canary's outcome metric may fall this far below the stable's: the
                    # demo's slices have a few hundred labels each.
                    # Its latency may be twice the stable's: the canary's model stage is 18 ms
                    # slower, a regression the summary explains by its stage without failing.
                    "canary": {"metric_tolerance": 0.05, "latency_ratio": 2.0},
                    "shadow": {},
                },
                {  # a generative model: time to first token and GPU beside latency
                    "name": GENERATIVE_MODEL,
                    "generative": True,
                    "slo": {"min_events": 50, "measures": {"ttft_p95_ms": TTFT_SLO_MS}},
                },
            ],
            "guards": {
                "golden_sets": {
                    "fraud": {
                        "path": str(golden),
                        "preset": "int8",
                        "id_column": "id",
                        "label_column": "label",
                        "slice_by": ["segment", "region"],
                    }
                },
                "schedule": {
                    "fraud": {
                        "reference_version": "1",
                        "every": "1h",
                        "action": "rollback",
                        "time_budget": "150s",
                    }
                },
            },
            "canaries": [
                {
                    "model": "fraud",
                    "canary": CANARY_VERSION,
                    "stable": "1",
                    "since": "3h",
                    "interval": "1h",
                    "correction": "holm",
                    "max_slices": 3,
                }
            ],
            "sources": [
                {
                    "name": "serving-log",
                    "type": "jsonl",
                    "path": str(workdir / "logs" / "*.jsonl"),
                    "poll_interval": "0.2s",
                }
            ],
            "collect": {"window": "1h", "allowed_lateness": "10m", "pipeline": False},
            "api": {"tokens": [{"name": "demo", "scopes": ["admin"], "token_env": TOKEN_ENV}]},
            "scheduler": {"evaluate_interval_s": 1, "lease_s": 180},
            "alerts": {
                "external_url": "http://127.0.0.1",
                "grouping": {
                    "group_by": ["alertname", "model"],
                    "group_wait": "0s",
                    "group_interval": "2s",
                },
                "receivers": [
                    {
                        "name": "local",
                        "type": "webhook",
                        "url": receiver_url,
                        "secret_env": SECRET_ENV,
                        "timeout_s": 5,
                    }
                ],
                "rules": [
                    _rule(
                        "FeatureDrift",
                        "drift",
                        "warning",
                        "{model} v{version}: {column} drifted in {slice} ({value:.3f})",
                    ),
                    _rule(
                        "OutcomeDegraded",
                        "outcome",
                        "critical",
                        "{model} v{version}: {metric} fell to {value:.3f} in {slice}",
                    ),
                    _rule(
                        "GateFailed",
                        "guard",
                        "critical",
                        "{model} {version} failed its canary gate; rolled back",
                    ),
                ],
                "delivery": {"poll_interval": "0.2s", "backoff_initial": "0.5s"},
            },
        },
        source="demo",
        # Only the demo's own token is read from the environment (no database URL override).
        env={TOKEN_ENV: os.environ.get(TOKEN_ENV, "")},
        names=registry_names(),
    )


def _rule(name: str, kind: str, severity: str, summary: str) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "severity": severity,
        "receivers": ["local"],
        "annotations": {"summary": summary},
    }


def onnx_scorer(model: Path) -> Scorer:
    """The reference model's fraud probability, on CPU."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])

    def score(x: np.ndarray) -> np.ndarray:
        return np.asarray(session.run(None, {"features": x})[0])[:, 1]

    return score


def create_baseline(engine: Engine, scorer: Scorer, out: Path) -> dict[str, float]:
    """Profile a training set into the baseline of fraud v1; returns its outcome metrics."""
    frame = training_frame(scorer)
    frame.to_parquet(out, index=False)
    columns = [*FEATURES, "prediction"]
    profiles = profile_frame(frame, specs_for(columns, frame), ["region"])
    save_baseline(engine, "fraud", "1", profiles, source=str(out))
    y, s = frame["label"].to_numpy(float), frame["prediction"].to_numpy(float)
    return {"accuracy": accuracy(y, s), "recall": recall(y, s)}
