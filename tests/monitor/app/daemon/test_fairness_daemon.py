"""Fairness end to end through `modelwatch serve` on SQLite: a config naming protected
attributes, predictions then their labels over HTTP, the evaluate job's fairness results over
the API (demographic parity before any label), and the `fairness` signal firing an alert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np

from migrations import upgrade
from monitor.storage import make_engine
from tests.monitor.app.daemon.conftest import ServerProcess, auth
from tests.waiting import wait_until

CONFIG = """\
database_url: {url}
models:
  - name: credit
    slices: [gender, age_band]
    fairness:
      attributes: [gender, age_band]
      thresholds: four_fifths
api:
  tokens:
    - {{name: dash, scopes: [read], token_env: MW_T_READ}}
    - {{name: collector, scopes: [ingest], token_env: MW_T_INGEST}}
scheduler:
  evaluate_interval_s: 1
alerts:
  rules:
    - {{name: Unfair, kind: fairness, severity: warning}}
"""


def _events(n: int = 300) -> list[dict[str, Any]]:
    """Predictions of two groups (women selected at 0.2, men at 0.6; no `age_band` on any
    event), then each one's label."""
    rng = np.random.default_rng(5)
    out, labels = [], []
    for i in range(2 * n):
        gender = "f" if i < n else "m"
        score = float(rng.random() < (0.2 if gender == "f" else 0.6)) * 0.5 + 0.25
        stamp = f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"
        out.append({
            "request_id": f"r{i}", "model": "credit", "model_version": "1", "timestamp": stamp,
            "features": {"x": 1.0}, "prediction": score, "metadata": {"gender": gender},
        })  # fmt: skip
        label = int(rng.random() < score)
        labels.append(
            {"request_id": f"r{i}", "model": "credit", "label": label, "timestamp": stamp}
        )
    return out + labels


def _get(server: ServerProcess, path: str, **params: str) -> Any:
    resp = httpx.get(f"{server.url}{path}", params=params, headers=auth("MW_T_READ"), timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_fairness_is_served_and_alerted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mw.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    config = tmp_path / "mw.yaml"
    config.write_text(CONFIG.format(url=url))
    server = ServerProcess(config)
    try:
        server.wait_ready()
        events = _events()
        path = "/v1/models/credit/fairness"

        def judged(labelled: bool) -> list[dict[str, Any]]:
            rows = _get(server, path, attribute="gender", slice="overall")["results"]
            eo = [r for r in rows if r["metric"] == "equal_opportunity_difference"]
            return rows if eo and (eo[0]["reason"] != "no labels yet") == labelled else []

        for at in range(0, 600, 300):  # predictions first: parity needs no labels
            resp = httpx.post(f"{server.url}/v1/events", json=events[at : at + 300],
                              headers=auth("MW_T_INGEST"), timeout=30)  # fmt: skip
            assert resp.status_code == 202, resp.text
        early = wait_until(lambda: judged(False), "parity before labels", 60)
        assert {r["metric"]: r["status"] for r in early}["demographic_parity_ratio"] == "violation"
        resp = httpx.post(f"{server.url}/v1/events", json=events[600:],
                          headers=auth("MW_T_INGEST"), timeout=30)  # fmt: skip
        assert resp.status_code == 202, resp.text
        rows = {r["metric"]: r for r in wait_until(lambda: judged(True), "labelled results", 60)}
        ratio = rows["demographic_parity_ratio"]
        assert ratio["status"] == "violation" and ratio["threshold"] == 0.8
        assert ratio["ci_high"] < 0.8 and 0.2 < ratio["value"] < 0.5
        assert rows["demographic_parity_difference"]["status"] == "violation"
        groups = _get(server, path, metric="selection_rate")["results"]
        assert {r["slice"]["gender"]: r["n"] for r in groups} == {"f": 300, "m": 300}
        age = _get(server, path, attribute="age_band", slice="overall")["results"]
        assert {r["status"] for r in age} == {"insufficient_data"}
        assert age[0]["reason"] == "every row's 'age_band' is null"

        for bad in ({"metric": "accuracy"}, {"granularity": "1d"}):
            resp = httpx.get(f"{server.url}{path}", params=bad, headers=auth("MW_T_READ"))
            assert resp.status_code == 422 and next(iter(bad)) in resp.text

        def alerted() -> list[dict[str, Any]]:
            alerts = _get(server, "/v1/alerts", state="firing")["alerts"]
            return [a for a in alerts if a["rule"] == "Unfair"]

        firing = wait_until(alerted, "the fairness alert", 60)
        metrics = {a["labels"]["metric"] for a in firing}
        assert {"demographic_parity_difference", "demographic_parity_ratio"} <= metrics
        assert {a["labels"]["group"] for a in firing} >= {"all"}
        assert {a["labels"]["attribute"] for a in firing} == {"gender"}

        def published() -> bool:
            text = httpx.get(f"{server.url}/metrics", timeout=10).text
            series = (
                'modelwatch_fairness_value{attribute="gender",'
                'metric="demographic_parity_ratio",model="credit",slice="all",version="1"}'
            )
            return series in text

        wait_until(published, "the fairness gauge", 30)
    finally:
        server.terminate()
