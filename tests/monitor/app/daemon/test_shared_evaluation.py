"""Two `serve` processes on one PostgreSQL share each tick's evaluation, one unit per model:
both take units, no window is evaluated twice, when one is killed mid-unit the other takes its
unit over within the lease, after a PostgreSQL restart evaluation goes on, nothing lost, and a
replica whose units' worker process is killed mid-unit starts another that takes them over."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.engine import Engine

from migrations import upgrade
from monitor.app.daemon._unit_process import PROCESS_NAME as UNITS_PROCESS
from monitor.config import ModelConfig
from monitor.storage import make_engine, pending_changes
from tests.monitor.app.daemon.conftest import ServerProcess
from tests.monitor.app.daemon.isolation_data import START, WINDOW, baseline, events, ingest
from tests.services.postgres import PostgresServer
from tests.waiting import wait_until

MODELS = ["m0", "m1", "m2", "m3"]
FEATURES = ["f0", "f1"]
LEASE_S = 4
CONFIG = (
    "database_url: {url}\nmodels:\n"
    + "".join(f"  - name: {m}\n" for m in MODELS)
    + f"scheduler:\n  evaluate_interval_s: 1\n  lease_s: {LEASE_S}\n"
    + "  retry_initial_s: 1\n"  # an item failing while PostgreSQL restarts is retried soon
)
# A unit's first write of results; held back by the test's lock, it shows a worker mid-unit.
BLOCKED_UNITS = """SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'
  AND query ILIKE 'INSERT INTO drift_results%'"""


def _windows(model: str, first: int, last: int) -> list[dict[str, object]]:
    """Events of windows `first`..`last` (inclusive) of `model`."""
    begin, end = START + first * WINDOW, START + (last + 1) * WINDOW
    return [
        e
        for e in events(model, FEATURES, last + 1, 30)
        if begin.isoformat() <= str(e["timestamp"]) < end.isoformat()
    ]


class ResultsHeld:
    """Holds back every write of drift results (units block mid-unit) until `release`."""

    def __init__(self, engine: Engine) -> None:
        self.conn = engine.connect()
        self.conn.execute(text("LOCK TABLE drift_results IN SHARE MODE"))

    def release(self) -> None:
        if not self.conn.closed:
            self.conn.rollback()
            self.conn.close()


def _blocked(engine: Engine, n: int) -> bool:
    with engine.connect() as conn:
        return int(conn.execute(text(BLOCKED_UNITS)).scalar_one()) >= n


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie its parent has not reaped does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _workers(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM procrastinate_workers")).scalar_one())


def _counts(url: str, family: str) -> dict[str, float]:
    """Per model, a counter of the server's /metrics (its sum over other labels)."""
    out: dict[str, float] = {}
    for line in httpx.get(f"{url}/metrics", timeout=5).text.splitlines():
        found = re.match(rf'{family}\{{.*model="([^"]+)".*\}} (\S+)', line)
        if found:
            out[found[1]] = out.get(found[1], 0.0) + float(found[2])
    return out


def _scalar(url: str, family: str) -> float:
    found = re.search(rf"^{family} (\S+)$", httpx.get(f"{url}/metrics", timeout=5).text, re.M)
    return float(found[1]) if found else 0.0


def _settled(engine: Engine) -> bool:
    return not any(pending_changes(engine, m, "drift") for m in MODELS)


WINDOWS_DONE = "modelwatch_window_evaluation_seconds_count"


def _each_once_more(server: ServerProcess, before: dict[str, float]) -> dict[str, float]:
    """The server's window counts once each model's one new window is counted: exactly one."""

    def counted() -> dict[str, float] | None:
        counts = _counts(server.url, WINDOWS_DONE)
        return counts if sum(counts.values()) - sum(before.values()) >= len(MODELS) else None

    after = wait_until(counted, "the survivor's counts", 30)
    assert {m: after[m] - before.get(m, 0) for m in MODELS} == dict.fromkeys(MODELS, 1)
    return after


def _ready(url: str) -> bool:
    answer = httpx.get(f"{url}/readyz", timeout=5)
    return answer.status_code == 200 and answer.json()["checks"]["evaluation"] == "ok"


def test_replicas_share_units_take_over_a_killed_ones_and_survive_a_restart(
    own_postgres: PostgresServer, tmp_path: Path
) -> None:
    url = own_postgres.create_database()
    engine = make_engine(url)
    upgrade(engine)
    cfg = tmp_path / "mw.yaml"
    cfg.write_text(CONFIG.format(url=url))
    held = ResultsHeld(engine)
    a = ServerProcess(cfg, log=tmp_path / "a.log")
    b = ServerProcess(cfg, log=tmp_path / "b.log")
    try:
        configs = [ModelConfig(name=m) for m in MODELS]
        for m in MODELS:  # while the servers start
            baseline(engine, m, FEATURES)
        first = [e for m in MODELS for e in _windows(m, 0, 1)]
        ingest(engine, configs, first)
        a.wait_ready()
        b.wait_ready()
        # each replica's worker (a process of its own, started with serve) is taking units
        wait_until(lambda: _workers(engine) == 2, "both replicas' workers", 30, 0.2)
        # each replica's worker is mid-unit: the tick's work is split between them
        wait_until(lambda: _blocked(engine, 2), "both replicas mid-unit", 30, 0.1)
        held.release()
        wait_until(lambda: _settled(engine), "every window evaluated", 30, 0.2)

        def all_counts() -> list[dict[str, float]] | None:
            counts = [_counts(s.url, WINDOWS_DONE) for s in (a, b)]
            return counts if sum(sum(c.values()) for c in counts) >= 2 * len(MODELS) else None

        done = wait_until(all_counts, "every window counted", 30)
        assert all(sum(d.values()) >= 2 for d in done), done  # each took a model's 2 windows
        for m in MODELS:  # and no window was evaluated twice
            assert sum(d.get(m, 0) for d in done) == 2, done

        before = _counts(b.url, WINDOWS_DONE)
        held = ResultsHeld(engine)
        ingest(engine, configs, [e for m in MODELS for e in _windows(m, 2, 2)], len(first))
        wait_until(lambda: _blocked(engine, 2), "both replicas mid-unit again", 30, 0.1)
        doomed = a.child(UNITS_PROCESS)
        a.proc.kill()  # a replica dies mid-unit, without a goodbye
        a.proc.wait(10)
        # and so does its units' worker process (before the held writes go on: what it ran
        # must not commit after its replica died)
        assert doomed is not None
        wait_until(lambda: not _alive(doomed), "the killed replica's worker gone", 2, 0.01)
        held.release()
        # its unit waits for the lease's takeover; the survivor evaluates every new window once
        wait_until(lambda: _settled(engine), "the killed replica's unit taken over", LEASE_S + 10)
        after = _each_once_more(b, before)
        assert _scalar(b.url, "modelwatch_evaluation_units_retried_total") >= 1

        # PostgreSQL restarts: what is ingested after it is evaluated, once, and /readyz is 200
        own_postgres.pause()
        own_postgres.resume()
        engine.dispose()
        offset = len(first) + len(MODELS) * len(_windows(MODELS[0], 2, 2))
        ingest(engine, configs, [e for m in MODELS for e in _windows(m, 3, 3)], offset)
        wait_until(lambda: _settled(engine), "evaluation after the restart", 30, 0.2)
        after = _each_once_more(b, after)
        wait_until(lambda: _ready(b.url), "/readyz 200 after the restart", 30, 0.3)

        # b's units run in a process of its own: killed mid-unit, it is started again, its
        # units are taken over and each new window is evaluated once
        units = wait_until(lambda: b.child(UNITS_PROCESS), "b's evaluation worker", 10)
        held = ResultsHeld(engine)
        offset += len(MODELS) * len(_windows(MODELS[0], 3, 3))
        ingest(engine, configs, [e for m in MODELS for e in _windows(m, 4, 4)], offset)
        wait_until(lambda: _blocked(engine, 1), "b's worker mid-unit", 30, 0.1)
        os.kill(units, signal.SIGKILL)
        held.release()
        wait_until(lambda: _settled(engine), "the killed worker's units taken over", 30, 0.2)
        _each_once_more(b, after)
        restarts = 'modelwatch_component_restarts_total{component="evaluation"}'
        assert _scalar(b.url, re.escape(restarts)) >= 1
        assert b.child(UNITS_PROCESS) not in (None, units)
    finally:
        held.release()
        a.terminate()
        assert b.terminate() == 0
        engine.dispose()
