"""HTTP ingest throughput with and without a scheduled golden replay running, side by side.

Two `modelwatch serve` daemons on fresh SQLite databases, each with the fraud model's fp32
reference (version 1) and a good int8 build (version 2, active) registered: *without* has no
`guards.schedule`; *with* replays version 2 against version 1 every second (a run starts as
soon as the previous one ends), on a golden set of `--golden-rows` rows, so replays run for the
whole measurement. Before the clients start, the *with* daemon has finished its first replay.
The clients are those of bench/api_ingest.py (N threads posting batches of 100 events); the two
daemons alternate per round. Reported: acked and aggregated events per second, their ratio
(target: the replay costs at most 10%; per round, as the two runs of a round are adjacent in
time), the API process's CPU per request (what the replay could add inside the daemon's own
process, whatever the machine's load), the replays finished while the clients posted and the
share of that time a replay process was running (sampled from /proc: the daemon's child at the
replay's priority).

    PYTHONPATH=. python bench/guard_schedule.py [--events 100000] [--clients 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.api_ingest import database, make_batches, over_http, server  # noqa: E402
from guards.registry import register_version  # noqa: E402
from guards.schedule import REPLAY_NICE  # noqa: E402
from monitor.storage import GateRun, make_engine, transaction  # noqa: E402

SCHEDULE = """\
guards:
  latency_batch_sizes: []
  golden_sets:
    fraud:
      path: {golden}
      preset: int8
      label_column: label
      id_column: id
      slice_by: [segment, region]
      features: [f0, f1, f2, f3, f4, f5, f6, f7]
  schedule:
    fraud: {{reference_version: "1", every: 1s, time_budget: 120s}}
"""


def replay_running(server_pid: int) -> bool:
    """Whether a child of the daemon runs at the replay's priority (the drain's is lower)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == server_pid and int(fields[16]) == REPLAY_NICE:
            return True
    return False


class Sampler:
    """Samples, 10 times a second, whether a replay process is running."""

    def __init__(self, server_pid: int) -> None:
        self.pid, self.samples, self.running = server_pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.samples += 1
            self.running += replay_running(self.pid)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def share(self) -> float:
        return self.running / self.samples if self.samples else 0.0


def replays(url: str) -> int:
    engine = make_engine(url)
    try:
        with transaction(engine) as s:
            return len(s.query(GateRun.id).all())
    finally:
        engine.dispose()


def register(url: str, models: dict[str, Path]) -> None:
    engine = make_engine(url)
    register_version(engine, "fraud", "1", models["reference"])
    register_version(engine, "fraud", "2", models["int8_good"], activate=True)
    engine.dispose()


def measure(
    directory: Path, name: str, batches: list[list[bytes]], clients: int, extra: str,
    models: dict[str, Path],
) -> tuple[float, float, int, float, float]:  # fmt: skip
    """(acked, aggregated) ev/s, the replays finished while the clients posted, the share of
    that time a replay process ran, and the API process's CPU ms per request."""
    with database("sqlite", directory, name) as url:
        register(url, models)
        with server(url, directory, extra) as (base, pid):
            if extra:
                deadline = time.monotonic() + 120
                while replays(url) == 0 and time.monotonic() < deadline:
                    time.sleep(0.2)
            before = replays(url)
            with Sampler(pid) as sampler:
                rates = over_http(base, batches, clients, pid, url)
            share = sampler.share
            return rates.acked, rates.aggregated, replays(url) - before, share, rates.cpu_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--golden-rows", type=int, default=50_000)
    args = parser.parse_args()
    from monitor.app.demo import _models as builders

    batches = make_batches(args.events)
    cpu = platform.processor() or platform.machine()
    print(f"{args.events} events, {args.clients} clients; golden set {args.golden_rows} rows; "
          f"{os.cpu_count()} cores {cpu}")  # fmt: skip
    rows: dict[str, list[tuple[float, float, int, float, float]]] = {"without": [], "with": []}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        models = builders.fraud_suite(directory / "models")
        golden = directory / "golden.parquet"
        frame = builders.fraud_golden(n=args.golden_rows, reference=models["reference"])
        frame.to_parquet(golden)
        extra = SCHEDULE.format(golden=golden)
        for r in range(args.rounds):
            order = ("without", "with") if r % 2 == 0 else ("with", "without")
            for kind in order:
                got = measure(directory, f"{kind}{r}", batches, args.clients,
                              extra if kind == "with" else "", models)  # fmt: skip
                rows[kind].append(got)
                print(f"round {r + 1} {kind:8s} replay: acked {got[0]:9,.0f} ev/s, aggregated "
                      f"{got[1]:9,.0f} ev/s, replays finished meanwhile {got[2]}, a replay "
                      f"running {got[3]:.0%} of the time; API CPU {got[4]:.2f} ms/request; "
                      f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    for i, what in ((0, "acked"), (1, "aggregated")):
        base = statistics.median(x[i] for x in rows["without"])
        busy = statistics.median(x[i] for x in rows["with"])
        # Each round's two runs are adjacent in time: their ratio is less exposed to the load
        # other jobs put on a shared machine than the ratio of medians.
        paired = [w[i] / b[i] for w, b in zip(rows["with"], rows["without"], strict=True)]
        print(f"median {what}: without {base:,.0f} ev/s, with a replay running {busy:,.0f} "
              f"ev/s: overhead {1 - busy / base:.1%}; per round "
              f"{', '.join(f'{1 - p:.0%}' for p in paired)}, median "
              f"{1 - statistics.median(paired):.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
