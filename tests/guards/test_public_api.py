"""The guards package's public surface is pinned."""

from __future__ import annotations

import guards
import guards.reports

GUARDS_ALL = {
    "CollectingListener",
    "Criterion",
    "GatePolicy",
    "GateRecord",
    "GateRequest",
    "GoldenSet",
    "GuardVerdict",
    "LatencyStats",
    "OutputStats",
    "PRESETS",
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
}


def test_guards_all_is_pinned() -> None:
    assert set(guards.__all__) == GUARDS_ALL
    assert all(hasattr(guards, name) for name in guards.__all__)


def test_reports_all_is_pinned() -> None:
    assert set(guards.reports.__all__) == {
        "headline",
        "localization_lines",
        "render_html",
        "render_json",
        "render_markdown",
    }
