"""The demo end to end, as a new user runs it: `modelwatch demo --workdir DIR`."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli_process

# the whole demo in its own process
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    workdir = tmp_path_factory.mktemp("demo") / "demo"
    return workdir, run_cli_process("demo", "--workdir", str(workdir), timeout=600)


def test_demo_delivers_what_it_promises(
    demo: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    workdir, out = demo
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads((workdir / "summary.json").read_text())
    # 15,000 requests; in the last hour each request of version 1 also has its shadow's event;
    # and the generative assistant's requests.
    generative = summary["generative"]
    assert summary["events_ingested"] == (
        15_000 + summary["shadow"]["pairs"] + generative["events"]
    )
    # The assistant's time to first token: ~200 ms, then tripled on a saturated GPU.
    *before, last = generative["ttft_p95_ms"]
    assert len(before) == 5 and all(v < 600 for v in before) and last > 600
    assert generative["gpu_utilization_p95"][-1] >= 95
    assert generative["ttft_breached_windows"] == 1
    assert summary["drift_alerts_delivered"] >= 1
    assert summary["outcome_alerts_delivered"] >= 1
    assert summary["gate_alerts_delivered"] >= 1
    assert summary["signatures_rejected"] == 0
    assert summary["gate"] == {"fp16": "pass", "int8_good": "pass", "int8_bad": "fail"}
    assert summary["rollbacks"] == [
        {"model": "fraud", "from": "4-int8-miscalibrated", "to": "3-int8"},
        {"model": "fraud", "from": "5-int8-swapped", "to": "3-int8"},
    ]
    for path in summary["reports"] + summary["dashboards"]:
        assert Path(path).stat().st_size > (500 if path.endswith((".html", ".json")) else 100)
    boards = [json.loads(Path(p).read_text()) for p in summary["dashboards"] if p.endswith(".json")]
    assert len(boards) >= 4 and all(b["panels"] for b in boards)
    assert any(p.endswith("drift.html") for p in summary["reports"])
    assert "modelwatch demo" in out.stdout


def test_demo_drift_is_found_in_the_drifted_region_only(
    demo: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    workdir, out = demo
    assert out.returncode == 0, out.stderr[-3000:]
    db = sqlite3.connect(workdir / "modelwatch.db")
    drifted = {
        s
        for (s,) in db.execute(
            "SELECT DISTINCT slice_key FROM drift_results WHERE status = 'drift'"
        )
    }
    assert '{"region":"eu"}' in drifted
    assert drifted <= {'{"region":"eu"}', ""}
    firing = [
        json.loads(labels)
        for (labels,) in db.execute("SELECT labels FROM alert_states WHERE state = 'firing'")
    ]
    regions = {a.get("slice") for a in firing if a["alertname"] == "FeatureDrift"}
    assert "region=eu" in regions
    assert regions <= {"region=eu", None}


def test_demo_summary_lists_the_release_scenes(
    demo: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    workdir, out = demo
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads((workdir / "summary.json").read_text())
    # The daemon's scheduled replay (its first run, as it starts) caught the swapped bad build
    # and rolled back to last-known-good.
    assert summary["replay"] == {
        "version": "5-int8-swapped",
        "verdict": "fail",
        "replays": 1,
        "rolled_back_to": "3-int8",
    }
    # The canary fails in region=eu alone; the whole traffic passes.
    canary = summary["canary"]
    assert (canary["verdict"], canary["overall"]) == ("fail", "pass")
    assert canary["failed_slices"] == ["region=eu"]
    assert canary["failed_criteria"] == ["prediction in region=eu"]
    # Its model stage is 18 ms slower: the p95 rise is explained by that stage (within the
    # demo's latency_ratio, so it fails nothing).
    assert canary["latency"].startswith("p95 +") and ", of which model +" in canary["latency"]
    rise, model = (float(p.split("+")[1].split(" ")[0]) for p in canary["latency"].split(", "))
    assert 15 <= model <= 21 and model <= rise + 3
    # Shadow mode: the good int8 build beside version 1, every request paired.
    shadow = summary["shadow"]
    assert (shadow["primary"], shadow["shadow"], shadow["unpaired"]) == ("1", "3-int8", 0)
    assert shadow["pairs"] > 1000 and shadow["status"] == "ok"
    low, high = shadow["flip_rate_ci"]
    assert 0 <= low <= shadow["flip_rate"] <= high < 0.05
    for line in ("caught 5-int8-swapped (fail), rolled back", "failed in region=eu; overall pass",
                 "6-canary latency"):  # fmt: skip
        assert line in " ".join(out.stdout.split()), out.stdout[-3000:]
    db = sqlite3.connect(workdir / "modelwatch.db")
    triggers = [t for (t,) in db.execute("SELECT trigger FROM mw_guard_history ORDER BY time")]
    assert triggers.count("schedule") == 1
    slices = dict(
        db.execute(
            "SELECT slice, verdict FROM mw_canary_slices WHERE version = '6-canary' "
            "AND pair_verdict = 'fail'"
        )
    )
    assert slices["region=eu"] == "fail" and slices["all"] == "pass"
