"""Canary pairs, skew and segment checks judged by a running `serve` on its schedule, per backend.

Traffic arrives over HTTP; the canary job stores each pair's verdict, `GET /v1/canary/...`
serves it (with its slices) for Argo and Flagger, a regression confined to `region=eu` reaches
a real receiver as a `canary` alert although the whole traffic passes, a skewed feature as a
`skew` alert, and a skew check whose file is missing as an `evaluation_failed` alert naming the
file, while the other check goes on; a segment check's runs are served by
`GET /v1/models/{model}/segments` and its segments reach the receiver as `segment` alerts.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from monitor.storage import SkewRun, make_engine, session_factory
from tests.alerts.receiver import RecordingReceiver
from tests.monitor.app.daemon.conftest import CONFIG, ServerProcess, auth, migrated_url
from tests.monitor.app.daemon.test_canary import post
from tests.monitor.canary.traffic import events
from tests.monitor.segments.conftest import planted_frame
from tests.monitor.test_skew_runs import frames
from tests.waiting import wait_until

pytestmark = pytest.mark.slow
SIGNING = "watch-signing-secret"

WATCH = """\
canaries:
  - {{model: fraud, canary: "2", stable: "1", interval: 1s}}
  - {{model: fraud, canary: "3", stable: "1", interval: 1s}}
skew:
  - name: features
    model: fraud
    key: id
    serving: {{path: "{dir}/serving.parquet"}}
    offline: {{sql: "SELECT id, a, b FROM features", url_env: MW_T_OFFLINE}}
    interval: 1s
  - name: broken
    model: fraud
    key: id
    serving: {{path: "{dir}/missing.parquet"}}
    offline: {{path: "{dir}/serving.parquet"}}
    interval: 1s
segments:
  - {{name: errors, model: fraud, label: label, prediction: pred, bins: 4, top: 2,
      current: {{path: "{dir}/scored.parquet"}}, interval: 1s}}
alerts:
  grouping: {{group_by: [alertname, model], group_wait: 0s, group_interval: 1s}}
  receivers:
    - {{name: hook, type: webhook, url: "{hook}", secret_env: MW_T_SIGNING, timeout_s: 5}}
  rules:
    - {{name: CanaryFailed, kind: canary, receivers: [hook]}}
    - {{name: Skewed, kind: skew, receivers: [hook]}}
    - {{name: JobFailing, kind: evaluation_failed, receivers: [hook]}}
    - {{name: WeakSegment, kind: segment, receivers: [hook]}}
  delivery: {{poll_interval: 0.2s, backoff_initial: 0.2s, backoff_max: 0.5s}}
"""


@pytest.fixture
def receiver() -> Iterator[RecordingReceiver]:
    hook = RecordingReceiver(secret=SIGNING)
    hook.start()
    yield hook
    hook.stop()


def _serve(backend: str, tmp_path: Path, hook: str, request: pytest.FixtureRequest
           ) -> tuple[ServerProcess, str]:  # fmt: skip
    """A server judging the pairs and checks of WATCH, and its database URL."""
    url = migrated_url(backend, tmp_path, request)
    serving, offline = frames()
    serving.to_parquet(tmp_path / "serving.parquet")
    planted_frame(6000).to_parquet(tmp_path / "scored.parquet")
    with sqlite3.connect(tmp_path / "offline.db") as conn:
        offline.to_sql("features", conn, index=False)
    config = CONFIG.replace("    slices: [region]\n",
                            "    slices: [region]\n    canary: {{threshold: 0.3}}\n")  # fmt: skip
    path = tmp_path / "mw.yaml"
    path.write_text(config.format(url=url) + WATCH.format(dir=tmp_path, hook=hook))
    env = {"MW_T_SIGNING": SIGNING, "MW_T_OFFLINE": f"sqlite:///{tmp_path / 'offline.db'}"}
    server = ServerProcess(path, env)
    server.wait_ready()
    return server, url


def _stored(server: ServerProcess, canary: str) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/canary/fraud/{canary}", params={"baseline": "1"},
                     headers=auth("MW_T_READ"), timeout=30)  # fmt: skip


def _alerts(receiver: RecordingReceiver) -> list[dict[str, Any]]:
    return [a for r in receiver.delivered() for a in r.json()["alerts"] if a["status"] == "firing"]


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=[pytest.mark.pg, pytest.mark.services])]
)
def test_pairs_and_checks_are_judged_on_schedule(
    backend: str, tmp_path: Path, receiver: RecordingReceiver, request: pytest.FixtureRequest
) -> None:
    server, url = _serve(backend, tmp_path, receiver.url, request)
    try:
        start = time.time() - 65
        post(server, events("1", 3000, start, seed=1) + events("2", 3000, start, True, seed=2))
        post(server, events("3", 3000, start, seed=3))
        wait_until(lambda: _stored(server, "2").json()["verdict"] == "fail", "a failed verdict", 60)
        wait_until(lambda: _stored(server, "3").json()["verdict"] == "pass", "a passing one", 60)
        bad = _stored(server, "2")
        assert bad.status_code == 409  # Argo's and Flagger's reading: not a pass
        doc = bad.json()
        whole = {c["name"]: c["status"] for c in doc["criteria"]}
        assert whole["prediction"] == "ok"  # the whole traffic hides the regression ...
        eu = next(s for s in doc["slices"] if s["slice"] == "region=eu")
        assert eu["verdict"] == "fail"  # ... which region=eu shows
        assert doc["correction"] == "benjamini_hochberg" and "evaluated_at" in doc
        assert _stored(server, "3").status_code == 200
        live = httpx.get(f"{server.url}/v1/canary/fraud/2", headers=auth("MW_T_READ"),
                         params={"baseline": "1", "since": "1h"}, timeout=60)  # fmt: skip
        assert set(live.json()) == {"model", "canary", "baseline", "since", "verdict", "criteria"}
        history = httpx.get(f"{server.url}/v1/canary/fraud/2/history", params={"limit": 3},
                            headers=auth("MW_T_READ"), timeout=30)  # fmt: skip
        assert history.status_code == 200 and len(history.json()["runs"]) == 3

        def delivered() -> bool:
            keys = ("alertname", "slice", "column", "item")
            names = {tuple(a["labels"].get(k) for k in keys) for a in _alerts(receiver)}
            return {("CanaryFailed", "region=eu", None, None), ("Skewed", None, "b", None),
                    ("WeakSegment", None, None, None),
                    ("JobFailing", None, None,
                     f"skew broken source {tmp_path}/missing.parquet")} <= names  # fmt: skip

        wait_until(delivered, "canary, skew, segment and evaluation_failed alerts", 60)
        _segments_served(server)
        assert all(r.valid for r in receiver.delivered())
        canary_alerts = [a for a in _alerts(receiver) if a["labels"]["alertname"] == "CanaryFailed"]
        assert {a["labels"]["version"] for a in canary_alerts} == {"2"}
        metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
        assert ('modelwatch_canary_verdict{model="fraud",stable="1",verdict="fail",version="2"} 1.0'
                in metrics)  # fmt: skip
        assert 'modelwatch_skew_mismatch_rate{check="features",column="b",model="fraud"} 0.2' in (
            metrics
        )
        assert 'modelwatch_segments_found{check="errors",mode="labels",model="fraud"' in metrics
        engine = make_engine(url)
        with session_factory(engine)() as s:
            checks = set(s.scalars(select(SkewRun.check_name)))
        engine.dispose()
        assert checks == {"features"}  # the broken check never stopped the other
    finally:
        server.terminate()


def _segments_served(server: ServerProcess) -> None:
    """The segment check's runs through `GET /v1/models/{model}/segments`: new, then persisting."""

    def get(path: str, **params: str) -> httpx.Response:
        return httpx.get(f"{server.url}{path}", params=params, headers=auth("MW_T_READ"),
                         timeout=30)  # fmt: skip

    def persisting() -> bool:
        runs = get("/v1/models/fraud/segments").json()["runs"]
        return bool(runs) and runs[0]["n_segments"] > runs[0]["n_new"]

    wait_until(persisting, "a run whose segments persist", 60)
    [run] = get("/v1/models/fraud/segments").json()["runs"]
    assert run["check"] == "errors" and run["status"] == "segments" and run["mode"] == "labels"
    top = run["report"]["segments"][0]
    assert top["description"].startswith("a = 3 AND b = x") and top["q_value"] < 0.05
    runs = get("/v1/models/fraud/segments", check="errors", limit="2").json()["runs"]
    assert len(runs) == 2 and runs[0]["evaluated_at"] > runs[1]["evaluated_at"]
    assert {s["persistence"] for s in runs[0]["report"]["segments"]} == {"persisting"}
    assert get("/v1/models/nope/segments").status_code == 404
    assert get("/v1/models/fraud/segments", check="nope").status_code == 404
