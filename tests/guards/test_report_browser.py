"""The drift, gate and skew HTML reports in headless Chromium: screenshots, no console output.

Debian's `chromium` must be installed (`./dev test` installs it); the test fails without it.
`MODELWATCH_UPDATE_SCREENSHOTS=1` also copies the screenshots to docs/img/ for the docs and README.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from guards import GateRequest, preset, run_gate
from guards.reports import render_html as render_gate
from monitor.detectors import evaluate
from monitor.profiles import profile_frame, specs_for
from monitor.reports import render_html as render_drift
from monitor.reports import render_skew_html
from monitor.skew import compute_skew
from tests.guards.conftest import Suite
from tests.guards.test_gate import fraud_golden
from tests.monitor.reports.test_drift_report import demo_frames

DOCS = Path(__file__).resolve().parents[2] / "docs" / "img"
# headless Chromium is a system package that `./dev test --fast` does not install
pytestmark = pytest.mark.slow
CONSOLE = re.compile(r":CONSOLE[:(]\d+\)?\] (.*)")


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "headless Chromium is required: apt-get install chromium (./dev test does it)"
    return path


def screenshot(page: Path, png: Path, height: int) -> list[str]:
    """Render `page` to `png`; returns every console message the page produced."""
    out = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0", f"--window-size=1100,{height}",
         f"--screenshot={png}", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert png.exists() and png.stat().st_size > 2000, out.stderr[-2000:]
    return CONSOLE.findall(out.stderr)


def _publish(png: Path) -> None:
    if os.environ.get("MODELWATCH_UPDATE_SCREENSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copy(png, DOCS / png.name)


def test_drift_report_in_chromium(tmp_path: Path) -> None:
    ref, cur = demo_frames()
    cols = ["f0", "f1", "channel"]
    specs = specs_for(cols, ref)
    ref_set, cur_set = (profile_frame(f, specs, ["region"]) for f in (ref, cur))
    page = tmp_path / "drift.html"
    page.write_text(
        render_drift(evaluate(ref_set, cur_set, cols), ref_set, cur_set, "train.parquet → today"),
        encoding="utf-8",
    )
    png = tmp_path / "drift-report.png"
    assert screenshot(page, png, 1500) == []
    _publish(png)


def test_gate_report_in_chromium(suite: Suite, tmp_path: Path) -> None:
    request = GateRequest(
        suite.models["reference"], suite.models["int8_bad"], fraud_golden(suite), preset("int8"),
        latency_batch_sizes=(1, 64), model="fraud", version="2",
    )  # fmt: skip
    page = tmp_path / "gate.html"
    page.write_text(render_gate(run_gate(request).to_dict()), encoding="utf-8")
    png = tmp_path / "gate-report.png"
    assert screenshot(page, png, 1300) == []
    _publish(png)


def test_skew_report_in_chromium(tmp_path: Path) -> None:
    offline, _ = demo_frames()
    offline.insert(0, "request_id", range(len(offline)))
    serving = offline.copy()
    serving.loc[:199, "f0"] *= 1.5  # a serving transform applied twice to 5% of requests
    serving.loc[100:139, "channel"] = "unknown"
    report = compute_skew(serving, offline, "request_id", None, names=("serving", "offline"))
    page = tmp_path / "skew.html"
    page.write_text(render_skew_html(report, "skew: serving vs offline"), encoding="utf-8")
    png = tmp_path / "skew-report.png"
    assert screenshot(page, png, 1100) == []
    _publish(png)


def test_console_errors_are_caught(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text("<body>" + "x " * 5000 + "<script>notDefined()</script></body>")
    messages = screenshot(page, tmp_path / "broken.png", 400)
    assert any("notDefined" in m for m in messages)
