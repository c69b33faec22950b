"""Paired shadow mode against a running `modelwatch serve` (SQLite and PostgreSQL): paired
events posted over HTTP are paired by request id, served by `GET /v1/models/{model}/shadow`,
exported as gauges, and a flip rate past its bound fires a `shadow` alert; a bad role or
request id is a dead letter naming the field."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.monitor.app.daemon.conftest import (
    CONFIG,
    ServerProcess,
    auth,
    migrated_url,
    post_drained,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

SHADOW = """\
models:
  - name: fraud
    slices: [region]
    shadow: {pair_horizon: 10m, min_pairs: 20, max_flip_rate: 0.05, alpha: 0.01}
"""
RULES = """\
alerts:
  rules:
    - {name: ShadowFlips, kind: shadow, matchers: ['criterion="flip_rate"']}
"""
NOW = datetime.now(UTC).timestamp() - 30


@dataclass
class Served:
    url: str


@pytest.fixture(
    scope="module",
    params=["sqlite", pytest.param("postgresql", marks=[pytest.mark.pg, pytest.mark.services])],
)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp(request.param)
    url = migrated_url(request.param, directory, request)
    config = CONFIG.format(url=url).replace(
        "models:\n  - name: fraud\n    slices: [region]\n", SHADOW
    )
    path = directory / "mw.yaml"
    path.write_text(config + RULES)
    proc = ServerProcess(path)
    proc.wait_ready()
    try:
        yield Served(proc.url)
    finally:
        proc.terminate()


def side(i: int, role: str, score: float, **over: Any) -> dict[str, Any]:
    return {
        "request_id": f"req-{i}",
        "model": "fraud",
        "model_version": "stable" if role == "primary" else "candidate",
        "timestamp": NOW - i * 0.01,
        "features": {"amount": 10.0 + i},
        "prediction": score,
        "metadata": {"region": "eu" if i % 2 else "us"},
        "latency_ms": 10.0 if role == "primary" else 15.0,
        "role": role,
        **over,
    }


def shadow(base: str) -> dict[str, Any]:
    resp = httpx.get(
        f"{base}/v1/models/fraud/shadow",
        params={"since": "1d"},
        headers=auth("MW_T_READ"),
        timeout=10,
    )
    assert resp.status_code == 200, resp.text
    doc: dict[str, Any] = resp.json()
    return doc


def test_paired_events_are_served_exported_and_alerted(served: Served) -> None:
    # 60 requests; the candidate flips 30 of them (0.9 against 0.1): a 50% flip rate
    primaries = [side(i, "primary", 0.1) for i in range(60)]
    shadows = [side(i, "shadow", 0.9 if i < 30 else 0.15) for i in range(60)]
    assert post_drained(served.url, primaries)["valid"] == 60
    assert post_drained(served.url, shadows)["valid"] == 60
    assert post_drained(served.url, [side(99, "primary", 0.1)])["valid"] == 1  # never paired
    doc = shadow(served.url)
    rows = {(r["primary_version"], r["shadow_version"], str(r["slice"])): r for r in doc["results"]}
    overall = rows[("stable", "candidate", "None")]
    assert (overall["pairs"], overall["status"], overall["failed"]) == (
        60,
        "diverged",
        ["flip_rate"],
    )
    assert overall["flip_rate"] == pytest.approx(0.5)
    assert overall["flip_rate_low"] > 0.05
    assert overall["latency_ratio_mean"] == pytest.approx(1.5)
    assert rows[("stable", "candidate", "{'region': 'eu'}")]["pairs"] == 30
    assert [w["pairs"] for w in doc["windows"]] == [60]

    def alert_fires() -> bool:
        got = httpx.get(f"{served.url}/v1/alerts", headers=auth("MW_T_READ"), timeout=10).json()
        return any(
            a["labels"].get("alertname") == "ShadowFlips"
            and "slice" not in a["labels"]  # all traffic
            and a["state"] == "firing"
            for a in got["alerts"]
        )

    wait_until(alert_fires, "the ShadowFlips alert to fire", timeout=90, interval=0.5)
    metrics = httpx.get(f"{served.url}/metrics", timeout=10).text
    assert 'modelwatch_shadow_statistic{model="fraud",primary_version="stable",' in metrics


def test_bad_roles_and_request_ids_are_dead_letters_naming_the_field(served: Served) -> None:
    result = post_drained(
        served.url,
        [
            {**side(200, "primary", 0.1), "role": "canary"},
            side(201, "shadow", 0.1, request_id="r\x00"),
            side(202, "shadow", 0.1, request_id="r" * 300),
            side(203, "primary", 0.1),
        ],
    )
    assert result["valid"] == 1
    got = [(d["index"], d["reason"], d["field"]) for d in result["first_dead_letters"]]
    assert got == [
        (0, "invalid_role", "role"),
        (1, "control_character", "request_id"),
        (2, "too_long", "request_id"),
    ]


def test_a_model_without_shadow_mode_is_404(served: Served) -> None:
    resp = httpx.get(f"{served.url}/v1/models/nope/shadow", headers=auth("MW_T_READ"), timeout=10)
    assert resp.status_code == 404
    unauthorised = httpx.get(f"{served.url}/v1/models/fraud/shadow", timeout=10)
    assert unauthorised.status_code == 401
