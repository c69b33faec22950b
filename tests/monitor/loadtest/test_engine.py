"""The open-loop engine against a real loopback endpoint with one worker and a known service time.

Queueing theory gives the expected curve: below capacity (rate < 1 / service time) a fixed-rate
stream finds the worker free, so latency ≈ service time; above it the queue grows by
`rate − capacity` requests each second, so latency grows with the test's elapsed time — which
only a measurement from the intended send time (corrected for coordinated omission) shows. One
overloaded run is shared by the tests of this module (a second per rate).
"""

from __future__ import annotations

import time

import pytest

from monitor.loadtest import LoadtestReport, Target, run_loadtest
from tests.monitor.loadtest.toy import refused_url, silent, toy_endpoint

# Real load against a loopback endpoint for whole seconds: the full lane's.
pytestmark = pytest.mark.slow

SERVICE_S = 0.01  # capacity 100/s (a little less: HTTP on loopback adds ~1 ms or more)
# Below capacity at 10% and 20% of it: under a loaded 2-core machine (the full suite beside this)
# the toy's measured service time grows to ~14 ms and its jitter with it, so a rate at 40% of the
# nominal capacity queued now and then; at 20% a request finds the worker free. A second of each
# rate gives the low rates 10 and 20 samples, so one slow wake-up is not the whole tail.
RATES = (10.0, 20.0, 200.0)
DURATION_S = 1.0


@pytest.fixture(scope="module")
def report() -> LoadtestReport:
    with toy_endpoint(SERVICE_S) as url:
        return run_loadtest(Target(url, "POST", b"{}"), RATES, DURATION_S, 3.0, connections=4)


def test_below_capacity_latency_is_the_service_time(report: LoadtestReport) -> None:
    for r in report.rates[:2]:
        assert r.errors == {} and r.ok == r.sent
        assert r.latency.p50 is not None and r.latency.p50 < 3 * SERVICE_S * 1e3
        assert r.achieved_rate == pytest.approx(r.rate, rel=0.1)
        assert not r.departs
    assert report.service_time_ms is not None
    assert SERVICE_S * 1e3 <= report.service_time_ms < 3 * SERVICE_S * 1e3


def test_above_capacity_only_the_corrected_latency_shows_the_queue(report: LoadtestReport) -> None:
    over = report.rates[-1]
    assert over.ok == over.sent  # nothing lost: every request waited its turn
    assert over.latency.p99 is not None and over.uncorrected.p99 is not None
    # After 1 s at 200/s against ~100/s, ~100 requests queue: the last waits ~1 s. With 4
    # connections a request that got one waits for about 4 service times: the median says so
    # (the p99 of those is the machine's scheduling, 252 ms once on a loaded one).
    assert over.latency.p99 > 300
    assert over.latency.p99 > 5 * over.uncorrected.p99
    assert over.uncorrected.p50 is not None and over.uncorrected.p50 < 4 * 4 * SERVICE_S * 1e3


def test_the_knee_is_near_one_over_the_service_time(report: LoadtestReport) -> None:
    assert report.knee_rate == 200.0, report.to_dict()
    assert report.sustained_rate == 20.0
    # one worker never serves more than 1 / S; loopback HTTP and a shared CPU cost some of it
    assert report.saturated_throughput is not None
    assert 0.6 / SERVICE_S < report.saturated_throughput < 1.05 / SERVICE_S


def test_a_refusing_target_is_reported_per_rate() -> None:
    report = run_loadtest(Target(refused_url()), [20.0, 40.0], 0.2, 0.5)
    for r, rate in zip(report.rates, (20.0, 40.0), strict=True):
        assert r.errors == {"refused": int(rate * 0.2)} and r.ok == 0
        assert r.departs and r.latency.p99 is None
    assert report.knee_rate == 20.0 and report.sustained_rate is None


def test_a_silent_target_times_out_within_the_deadline() -> None:
    started = time.monotonic()
    with silent() as url:
        report = run_loadtest(Target(url), [20.0, 40.0], 0.2, 0.3)
    # each rate's own deadline is duration + timeout + 1 s grace: never a hang
    assert time.monotonic() - started < 2 * (0.2 + 0.3 + 1.0)
    assert [r.errors for r in report.rates] == [{"timeout": 4}, {"timeout": 8}]
