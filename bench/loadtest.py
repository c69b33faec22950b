"""`modelwatch loadtest` (open loop, corrected for coordinated omission) beside Locust (closed).

`PYTHONPATH=. python bench/loadtest.py [--service-ms 10] [--rates 25,50,80,150,300]
[--duration 5] [--timeout 10]`

The toy endpoint of the tests (one worker, a fixed service time: capacity ≈ 1 / service time)
runs in its own process; at each rate, in one run, side by side:

- modelwatch's engine fires `rate × duration` requests on the fixed schedule and measures each
  from its intended send time (default pool: rate × 0.1 s connections);
- Locust (headless, as a library, in its own process: gevent patches the interpreter) runs as
  many users as the engine's connections, each holding `rate / users` requests/s with
  `constant_throughput`, spawned evenly over one period and measured after, so both *aim* at
  the same rate. A Locust user waits for its
  response before the next request: past capacity it sends less and measures from when it did
  send, so its percentiles stay near (users × service time) however far the queue would grow.

Below capacity both should agree on the percentiles (within Locust's two-significant-digit
rounding); above it they must not.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from monitor.loadtest import Target, default_connections, run_loadtest  # noqa: E402
from tests.services.net import free_port, wait_for_port  # noqa: E402

# The toy endpoint, served until killed (its own process: no GIL shared with either client).
SERVE = """
import sys, threading
from tests.monitor.loadtest.toy import serve_forever
serve_forever(float(sys.argv[1]), int(sys.argv[2]))
"""

# One Locust run: `users` each holding rate / users requests/s for `duration`, stats as JSON.
LOCUST = """
import itertools, json, sys, time
import gevent
from locust import FastHttpUser, constant_throughput, task
from locust.env import Environment
url, users, rate, duration = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
class Client(FastHttpUser):
    host = url.rsplit("/", 1)[0]
    wait_time = constant_throughput(rate / users)
    order = itertools.count()
    def on_start(self):  # the i-th user starts i / rate late: evenly spread, not in bursts
        gevent.sleep(next(self.order) / rate)
        self._cp_last_run = time.perf_counter()  # constant_pacing's clock starts after the offset
    network_timeout = connection_timeout = 10.0
    @task
    def predict(self):
        self.client.post("/predict", data=b"{}", headers={"content-type": "application/json"})
env = Environment(user_classes=[Client])
runner = env.create_local_runner()
# Locust spawns a second's users at once: on_start spreads them over one period, then measured
runner.start(users, spawn_rate=users)
gevent.sleep(users / rate + 1.2)
env.stats.reset_all()
gevent.sleep(duration)
runner.quit()
total = env.stats.total
pct = total.get_response_time_percentile
print(json.dumps({"requests": total.num_requests, "failures": total.num_failures,
  "rate": total.num_requests / duration, "p50": pct(0.5), "p95": pct(0.95), "p99": pct(0.99),
  "max": total.max_response_time}))
"""


def locust(url: str, rate: float, duration: float) -> dict[str, float]:
    """Locust's numbers at `rate` (users = the engine's default connections)."""
    users = default_connections(rate)
    out = subprocess.run(
        [sys.executable, "-c", LOCUST, url, str(users), str(rate), str(duration)],
        capture_output=True, text=True, cwd=ROOT, timeout=duration + 60, check=True,
    )  # fmt: skip
    return dict(json.loads(out.stdout.strip().splitlines()[-1]), users=users)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--service-ms", type=float, default=10.0)
    parser.add_argument("--rates", default="25,50,80,150,300")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(args.service_ms / 1e3), str(port)], cwd=ROOT
    )
    try:
        wait_for_port(port, 20, "toy endpoint")
        url = f"http://127.0.0.1:{port}/predict"
        print("| rate /s | tool | achieved /s | p50 ms | p95 ms | p99 ms | max ms | errors |")
        print("|---|---|---|---|---|---|---|---|")
        for rate in rates:
            report = run_loadtest(Target(url, "POST", b"{}"), [rate], args.duration, args.timeout)
            r = report.rates[0]
            lat, un = r.latency, r.uncorrected
            errors = sum(r.errors.values())
            print(f"| {rate:g} | modelwatch | {r.achieved_rate:.1f} | {lat.p50:.1f} | "
                  f"{lat.p95:.1f} | {lat.p99:.1f} | {lat.max:.1f} | {errors} |")  # fmt: skip
            print(f"| {rate:g} | modelwatch, uncorrected | | {un.p50:.1f} | {un.p95:.1f} | "
                  f"{un.p99:.1f} | {un.max:.1f} | |")  # fmt: skip
            time.sleep(0.5)  # let the endpoint drain before the other tool starts
            lo = locust(url, rate, args.duration)
            print(f"| {rate:g} | Locust ({lo['users']} users) | {lo['rate']:.1f} | "
                  f"{lo['p50']:.0f} | {lo['p95']:.0f} | {lo['p99']:.0f} | {lo['max']:.0f} | "
                  f"{lo['failures']} |", flush=True)  # fmt: skip
            time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
