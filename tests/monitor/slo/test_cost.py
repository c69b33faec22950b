"""Cost per 1,000 predictions charged to the version and slice that caused it (known answers).

A version with its own price in the registry costs that; versions without one share the
configured fleet by their requests; a slice is its version's cost shared by requests (or by
summed latency). The old charge (the whole fleet's price over one slice's or one version's
requests) made a slice with a tenth of the traffic look ten times dearer.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from sqlalchemy.engine import Engine

from collectors import Ingestor, RawRecord
from guards.registry import optimization_settings, register_version
from monitor.config import CollectConfig, ModelConfig
from monitor.config.serving import CostConfig, SloConfig
from monitor.errors import InputError
from monitor.profiles._latency import LatencySketch
from monitor.profiles.serving import ServingSummary
from monitor.slo.evaluate import ServingWindow, evaluate_windows, slo_results, version_prices

START = datetime(2026, 1, 1, tzinfo=UTC)
END = START + timedelta(hours=1)
FLEET = CostConfig(hourly_price=0.72, replicas=2)  # $1.44 per hour


def served(version: str, slice_key: str, requests: int, ms: float = 1.0) -> ServingWindow:
    summary = ServingSummary(requests, 0, LatencySketch.of([ms] * requests))
    return ServingWindow("fraud", version, START, END, slice_key, summary)


def costs(windows: list[ServingWindow], cfg: CostConfig = FLEET, **kw: object) -> dict:
    slo = SloConfig(cost_per_1k=cfg)
    return {
        (r.version, r.slice_key): r.value
        for r in evaluate_windows(windows, slo, END, **kw)  # type: ignore[arg-type]
    }


def test_a_slice_costs_what_its_version_costs_per_request() -> None:
    # 3,600 requests in the hour at $1.44: $0.40 per 1,000, for the 10 % slice too (was $4.00)
    got = costs([served("1", "", 3600), served("1", "eu", 360), served("1", "us", 3240)])
    assert got[("1", "")] == pytest.approx(0.4)
    assert got[("1", "eu")] == pytest.approx(0.4)
    assert got[("1", "us")] == pytest.approx(0.4)


def test_versions_without_a_price_share_the_fleet_by_requests() -> None:
    # stable 3,000 and canary 600 requests share $1.44: $1.20 and $0.24 an hour, $0.40 per 1k each
    got = costs([served("stable", "", 3000), served("canary", "", 600)])
    assert got[("stable", "")] == pytest.approx(0.4)
    assert got[("canary", "")] == pytest.approx(0.4)


def test_a_version_with_its_own_price_is_charged_that_and_not_the_fleet() -> None:
    # the canary runs on one $0.50 replica: $0.50 / 600 requests; the stable keeps the fleet
    got = costs([served("stable", "", 3000), served("canary", "", 600)], own={"canary": 0.5})
    assert got[("canary", "")] == pytest.approx(0.5 / 600 * 1000)
    assert got[("stable", "")] == pytest.approx(1.44 / 3000 * 1000)


def test_compute_time_share_charges_the_slow_slice_more() -> None:
    # eu: 360 requests at 10 ms (3,600 ms), us: 3,240 at 1 ms (3,240 ms) of the hour's $1.44
    windows = [
        ServingWindow("fraud", "1", START, END, "",
                      ServingSummary(3600, 0, LatencySketch.of([10.0] * 360 + [1.0] * 3240))),
        served("1", "eu", 360, ms=10.0),
        served("1", "us", 3240, ms=1.0),
    ]  # fmt: skip
    got = costs(windows, CostConfig(hourly_price=0.72, replicas=2, share="compute_time"))
    eu_share = 3600 / 6840
    assert got[("1", "eu")] == pytest.approx(1.44 * eu_share / 360 * 1000, rel=0.02)
    assert got[("1", "us")] == pytest.approx(1.44 * (1 - eu_share) / 3240 * 1000, rel=0.02)
    assert got[("1", "")] == pytest.approx(0.4)


def test_no_traffic_has_no_cost_and_one_request_has_the_whole_hour() -> None:
    got = costs([served("1", "", 0)])
    assert got[("1", "")] is None
    assert costs([served("1", "", 1)])[("1", "")] == pytest.approx(1440.0)


def test_a_price_must_be_a_positive_finite_number() -> None:
    assert optimization_settings(hourly_price=0.5, replicas=3) == {
        "hourly_price": 0.5, "replicas": 3,
    }  # fmt: skip
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InputError, match="hourly_price"):
            optimization_settings(hourly_price=bad)
    with pytest.raises(InputError, match="replicas"):
        optimization_settings(replicas=2)


def _ingest(engine: Engine, cfg: ModelConfig, version: str, n: int, first: int) -> None:
    ing = Ingestor(engine, "src", "kafka", [cfg], CollectConfig())
    now = datetime.now(UTC).timestamp() - 1
    events = [
        {"request_id": f"r{first + i}", "model": "fraud", "model_version": version,
         "timestamp": now, "features": {"x": 1.0}, "prediction": 0.5,
         "metadata": {"region": "eu" if i % 10 == 0 else "us"}, "latency_ms": 5.0}
        for i in range(n)
    ]  # fmt: skip
    records = [RawRecord("p0", first + i, first + i + 1, orjson.dumps(e))
               for i, e in enumerate(events)]  # fmt: skip
    assert ing.ingest(records).events == n


def test_stored_versions_are_charged_from_the_registry_and_the_fleet(
    engine: Engine, tmp_path: Path
) -> None:
    artifact = tmp_path / "model.onnx"
    artifact.write_bytes(b"not a real model; only its hash is stored")
    register_version(engine, "fraud", "stable", artifact)
    register_version(engine, "fraud", "canary", artifact,
                     settings=optimization_settings(hourly_price=0.5, replicas=2))  # fmt: skip
    assert version_prices(engine, "fraud") == {"canary": 1.0}
    slo = SloConfig(cost_per_1k=CostConfig(hourly_price=0.72, replicas=2))
    cfg = ModelConfig(name="fraud", slices=["region"], slo=slo)
    _ingest(engine, cfg, "stable", 300, 0)
    _ingest(engine, cfg, "canary", 100, 1000)
    now = datetime.now(UTC)
    assert cfg.slo is not None
    both = slo_results(engine, "fraud", cfg.slo, now - timedelta(hours=2), now, now)
    one = slo_results(engine, "fraud", cfg.slo, now - timedelta(hours=2), now, now, "canary")
    got = {(r.version, r.slice_key): r.value for r in both if r.objective == "cost_per_1k"}
    stable, canary = got[("stable", "")], got[("canary", "")]
    assert stable is not None and canary is not None
    # the canary: its own $1.00/h over 100 requests; the stable: the whole fleet's $1.44/h over
    # 300 (the canary has its own price). The ratio holds whatever part of the window passed.
    assert canary / stable == pytest.approx((1.0 / 100) / (1.44 / 300))
    eu = '{"region":"eu"}'
    assert got[("stable", eu)] == pytest.approx(stable)  # a slice: its version's cost per request
    # asked for one version, it is charged the same as among all of them
    assert {(r.version, r.slice_key): r.value for r in one if r.objective == "cost_per_1k"} == {
        k: v for k, v in got.items() if k[0] == "canary"
    }
