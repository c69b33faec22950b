"""Golden-set replay of optimized vs reference ONNX models, verdicts, canary gate and rollback.

Importing this package loads neither onnxruntime nor pandas; they load when a gate runs.
"""

from __future__ import annotations

from guards._request import gate_request, layered_policy
from guards.events import CollectingListener, Rollback, RollbackListener
from guards.gate import GateRequest, run_gate
from guards.golden import GoldenSet, load_golden
from guards.history import GateRecord, latest_verdict, record_gate
from guards.policy import PRESETS, GatePolicy, preset
from guards.registry import list_models, register_version, rollback
from guards.results import Criterion, GuardVerdict, LatencyStats, OutputStats, WorstRow

__all__ = [
    "PRESETS",
    "CollectingListener",
    "Criterion",
    "GatePolicy",
    "GateRecord",
    "GateRequest",
    "GoldenSet",
    "GuardVerdict",
    "LatencyStats",
    "OutputStats",
    "Rollback",
    "RollbackListener",
    "WorstRow",
    "gate_request",
    "latest_verdict",
    "layered_policy",
    "list_models",
    "load_golden",
    "preset",
    "record_gate",
    "register_version",
    "rollback",
    "run_gate",
]
