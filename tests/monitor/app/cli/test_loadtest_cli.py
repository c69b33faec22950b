"""`modelwatch loadtest`: reports on a real loopback endpoint; bad flags are one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.monitor.loadtest.toy import refused_url, toy_endpoint

# Real load against a loopback endpoint for whole seconds: the full lane's.
pytestmark = pytest.mark.slow


def test_loadtest_writes_json_html_and_markdown(tmp_path: Path) -> None:
    payload = tmp_path / "row.json"
    payload.write_text('{"x": [1, 2]}')
    out = {fmt: tmp_path / f"lt.{fmt}" for fmt in ("json", "html", "markdown")}
    with toy_endpoint(0.005) as url:
        result = run_cli("loadtest", url, "--qps", "20,40", "--duration", "300ms",
                         "--payload", str(payload), *(a for f, p in out.items()
                                                      for a in (f"--{f}", str(p))))  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(out["json"].read_text())
    assert [r["rate"] for r in doc["rates"]] == [20, 40]
    assert all(r["errors"] == {} and r["ok"] == r["sent"] for r in doc["rates"])
    # where the knee falls depends on this machine's load (the engine's tests pin it on a
    # one-worker endpoint with a known service time); here only that it is reported
    assert {"rate", "sustained_rate"} <= set(doc["knee"])
    page = out["html"].read_text()
    assert "<svg" in page and "latency vs offered rate" in page
    assert "| offered /s |" in out["markdown"].read_text()
    assert "knee=" in result.stdout


def test_a_refusing_target_is_a_report_not_a_failure() -> None:
    result = run_cli("loadtest", refused_url(), "--qps", "10", "--duration", "200ms",
                     "--json", "-")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["rates"][0]["errors"] == {"refused": 2}
    assert "knee=10/s" in result.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--qps", "10,abc"], "--qps"),
        (["--qps", "0"], "--qps"),
        (["--qps", "10", "--duration", "soon"], "--duration"),
        (["--qps", "10", "--timeout", "0s"], "--timeout"),
        (["--qps", "10", "--connections", "0"], "--connections"),
        (["--qps", "10", "--payload", "/nonexistent/file"], "--payload"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(args: list[str], named: str) -> None:
    result = run_cli("loadtest", "http://127.0.0.1:9/", *args)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and named in errors[0]
    assert "Traceback" not in result.stderr


def test_a_url_that_is_not_http_is_named() -> None:
    result = run_cli("loadtest", "localhost:8000", "--qps", "10")
    assert result.returncode == 2 and "'localhost:8000' is not an http(s) URL" in result.stderr


def test_register_stores_the_capacity_with_the_version(tmp_path: Path) -> None:
    db = ["--database-url", f"sqlite:///{tmp_path / 'mw.db'}"]
    artifact = tmp_path / "model.onnx"
    artifact.write_bytes(b"not read by loadtest")
    reg = run_cli("models", "register", "--model", "fraud", "--version", "2", str(artifact), *db)
    assert reg.returncode == 0, reg.stderr
    unknown = run_cli("loadtest", refused_url(), "--qps", "10", "--register", "fraud", "9", *db)
    assert unknown.returncode == 2 and "no version '9'" in unknown.stderr
    with toy_endpoint(0.005) as url:
        result = run_cli("loadtest", url, "--qps", "20,40", "--duration", "300ms",
                         "--register", "fraud", "2", *db)  # fmt: skip
    assert result.returncode == 0, result.stderr
    listed = json.loads(run_cli("models", "list", "--json", *db).stdout)
    capacity = listed[0]["versions"][0]["settings"]["capacity"]
    # 40/s is far below a 5 ms endpoint's capacity, but a loaded machine may still see a knee:
    # the registry stores what was measured, whichever it was
    assert (capacity["sustained_qps"], capacity["knee_qps"]) in ((40, None), (20, 40))
    assert capacity["url"] == url and capacity["service_time_ms"] > 0
