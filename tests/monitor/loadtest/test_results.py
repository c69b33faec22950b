"""The knee rule and the percentiles on hand-made histograms (no network)."""

from __future__ import annotations

import pytest
from hdrh.histogram import HdrHistogram

from monitor.loadtest import MEDIAN_FACTOR, TAIL_FACTOR, RateRun, percentiles
from monitor.loadtest._results import summarise


def _run(rate: float, latencies_ms: list[float], errors: dict[str, int] | None = None,
         elapsed: float = 1.0) -> RateRun:  # fmt: skip
    h = HdrHistogram(1, 3_600_000_000, 3)
    for ms in latencies_ms:
        h.record_value(int(ms * 1000))
    sent = len(latencies_ms) + sum((errors or {}).values())
    return RateRun(rate, sent, h, h, errors or {}, elapsed, 4)


def test_percentiles_in_ms() -> None:
    lat = percentiles(_run(10, [float(i) for i in range(1, 101)]).corrected)
    assert lat.p50 == pytest.approx(50, rel=0.01) and lat.p99 == pytest.approx(99, rel=0.01)
    assert lat.max == pytest.approx(100, rel=0.01)


def test_the_knee_is_the_first_rate_whose_p99_leaves_the_low_rate_tail() -> None:
    ok = [10.0] * 100
    slow = [10.0] * 90 + [10.0 * TAIL_FACTOR + 5] * 10
    runs = [_run(200, slow, elapsed=100 / 200), _run(100, ok, elapsed=1.0),
            _run(50, ok, elapsed=2.0)]  # fmt: skip
    report = summarise("u", 1.0, 1.0, runs)
    assert [r.rate for r in report.rates] == [50, 100, 200]
    assert report.service_time_ms == pytest.approx(10, rel=0.01)
    assert (report.knee_rate, report.sustained_rate) == (200, 100)


def test_a_median_that_leaves_the_service_time_departs() -> None:
    low = _run(10, [10.0] * 50 + [40.0] * 50)  # a noisy tail at the lowest rate: p99 40
    queued = _run(20, [10.0 * MEDIAN_FACTOR + 5] * 60 + [40.0] * 40)  # p99 within 3 x 40
    report = summarise("u", 1.0, 1.0, [low, queued])
    assert not report.rates[0].departs and report.rates[1].departs
    assert report.knee_rate == 20


def test_a_noisy_tail_at_the_lowest_rate_is_not_a_knee() -> None:
    noisy = [10.0] * 95 + [60.0] * 5  # p99 six times the median, nothing queued
    report = summarise("u", 1.0, 1.0, [_run(100, noisy), _run(200, noisy, elapsed=0.5)])
    assert report.knee_rate is None and report.sustained_rate == 200


@pytest.mark.parametrize(
    ("errors", "elapsed", "departs"),
    [({}, 1.0, False), ({"status 503": 2}, 1.0, True), ({}, 1.2, True)],
)
def test_errors_or_a_rate_not_achieved_depart(
    errors: dict[str, int], elapsed: float, departs: bool
) -> None:
    report = summarise("u", 1.0, 1.0, [_run(100, [5.0] * 100, errors, elapsed)])
    assert report.rates[0].departs is departs
    assert report.knee_rate == (100 if departs else None)


def test_no_run_without_rates_is_no_knee() -> None:
    report = summarise("u", 1.0, 1.0, [])
    assert report.rates == () and report.knee_rate is None and report.service_time_ms is None
