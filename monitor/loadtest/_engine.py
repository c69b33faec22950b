"""The open-loop engine: requests fired on a fixed schedule, latency from the intended send time.

At `rate` requests per second the i-th request of a run is *intended* at `t0 + i / rate`,
whatever happened to the earlier ones. A load generator that waits for a free connection before
sending (every closed-loop tool, and any tool whose connections are all busy) would otherwise
send late and start its clock late, so the time a request spent queued behind a slow server is
never measured: coordinated omission (Gil Tene's term). As wrk2 does with `-R`, each latency
here is `completion − intended send time` (the *corrected* latency); the *uncorrected* latency,
`completion − actual send time` (when the request got one of the `connections`), is kept too,
to show the difference. The percentiles come from HdrHistogram (microseconds, 3 significant
digits).

Every wait has a deadline: each request at most `timeout` seconds in total (a timeout error),
each rate at most `duration + timeout + GRACE_S`; requests still waiting then are cancelled and
counted as timeouts, so a target that refuses or never answers is reported, never a hang.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx
from hdrh.histogram import HdrHistogram

# Latencies in microseconds, from 1 µs to an hour, 3 significant digits (±0.1 %).
_HIST_MAX_US = 3_600_000_000
_HIST_DIGITS = 3
# Little's law sizing of the default pool: in flight = rate × latency, for latencies up to this.
SIZING_LATENCY_S = 0.1
MIN_CONNECTIONS, MAX_CONNECTIONS = 4, 256
# Slack after the last request's own deadline before the rate's total deadline cancels the rest.
GRACE_S = 1.0


def default_connections(rate: float) -> int:
    """`rate × SIZING_LATENCY_S` connections, within [MIN_CONNECTIONS, MAX_CONNECTIONS]."""
    return max(MIN_CONNECTIONS, min(MAX_CONNECTIONS, math.ceil(rate * SIZING_LATENCY_S)))


@dataclass(frozen=True)
class Target:
    """What each request sends: `method` to `url` with `body` (None: no body) and `headers`."""

    url: str
    method: str = "GET"
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class _Tally:
    """What one rate's requests recorded so far."""

    corrected: HdrHistogram = field(default_factory=lambda: _histogram())
    uncorrected: HdrHistogram = field(default_factory=lambda: _histogram())
    errors: Counter[str] = field(default_factory=Counter)
    last_done: float = 0.0

    def ok(self, intended: float, sent: float, done: float) -> None:
        self.corrected.record_value(max(1, round((done - intended) * 1e6)))
        self.uncorrected.record_value(max(1, round((done - sent) * 1e6)))
        self.last_done = max(self.last_done, done)


def _histogram() -> HdrHistogram:
    return HdrHistogram(1, _HIST_MAX_US, _HIST_DIGITS)


@dataclass(frozen=True)
class RateRun:
    """The raw outcome of one rate: histograms (µs), error counts by kind and the timing."""

    rate: float
    sent: int
    corrected: HdrHistogram
    uncorrected: HdrHistogram
    errors: dict[str, int]
    elapsed_s: float
    connections: int


def error_kind(exc: BaseException) -> str:
    """`timeout`, `refused`, `connect` or the exception's class name."""
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError):
        return "refused" if _refused(exc) else "connect"
    return type(exc).__name__


def _refused(exc: BaseException) -> bool:
    """A ConnectionRefusedError anywhere in the chain (httpx wraps it twice)."""
    seen: BaseException | None = exc
    for _ in range(8):  # a bounded walk: chains can loop
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


async def run_rate(
    target: Target, rate: float, duration: float, timeout: float, connections: int | None = None
) -> RateRun:
    """Fire `rate × duration` requests at their intended times; wait at most the rate's deadline."""
    pool = connections or default_connections(rate)
    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
    tally = _Tally()
    gate = asyncio.Semaphore(pool)
    n = max(1, math.floor(rate * duration))
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        t0 = time.monotonic()
        tasks = []
        for i in range(n):
            intended = t0 + i / rate
            await asyncio.sleep(max(0.0, intended - time.monotonic()))
            call = _one(client, target, intended, timeout, gate, tally)
            tasks.append(asyncio.ensure_future(call))
        deadline = t0 + duration + timeout + GRACE_S
        _, pending = await asyncio.wait(tasks, timeout=max(0.0, deadline - time.monotonic()))
        for task in pending:
            task.cancel()
        if pending:
            tally.errors["timeout"] += len(pending)
            await asyncio.wait(pending)
    # below capacity the schedule's span; past it, until the last success drained
    elapsed = max((tally.last_done or t0) - t0, n / rate)
    return RateRun(rate, n, tally.corrected, tally.uncorrected, dict(tally.errors), elapsed, pool)


async def _one(
    client: httpx.AsyncClient,
    target: Target,
    intended: float,
    timeout: float,
    gate: asyncio.Semaphore,
    tally: _Tally,
) -> None:
    """One request; its total deadline counts from the intended time (waiting for a connection)."""
    try:
        async with asyncio.timeout_at(_loop_time(intended + timeout)):
            async with gate:
                sent = time.monotonic()
                response = await client.request(
                    target.method, target.url, content=target.body, headers=dict(target.headers)
                )
    except Exception as exc:  # every failure is a counted error of its kind, never a crash
        tally.errors[error_kind(exc)] += 1
        return
    done = time.monotonic()
    if response.is_success:
        tally.ok(intended, sent, done)
    else:
        tally.errors[f"status {response.status_code}"] += 1


def _loop_time(monotonic_at: float) -> float:
    """A time.monotonic() instant on the running loop's clock (asyncio.timeout_at wants that)."""
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic_at - time.monotonic())
