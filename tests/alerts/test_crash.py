"""kill -9 of the delivery worker (a real subprocess) mid-send, or after sending but before
recording the results, then a restart: nothing lost, re-sends carry the same keys."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alerts._evaluator import Evaluator
from monitor.config import parse_config
from monitor.storage import AlertNotification, transaction, utcnow
from tests.alerts.conftest import drift
from tests.alerts.receiver import RecordingReceiver
from tests.conftest import REPO
from tests.waiting import wait_until

# delivery workers in their own processes, killed with -9
pytestmark = pytest.mark.slow

SECRET = "crash-test-secret"


def _config(tmp_path: Path, database_url: str, url: str) -> Path:
    data = {
        "database_url": database_url,
        "alerts": {
            "grouping": {"group_wait": "0s"},
            "receivers": [
                {"name": "hook", "type": "webhook", "url": url, "secret_env": "HOOK_SECRET"}
            ],
            "rules": [{"name": "FeatureDrift", "kind": "drift", "receivers": ["hook"]}],
            "delivery": {"lease": "1s", "backoff_initial": "0.1s", "poll_interval": "0.05s"},
        },
    }
    path = tmp_path / "mw.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _worker(config: Path, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "MODELWATCH_DATABASE_URL"}
    env.update({"HOOK_SECRET": SECRET, "PYTHONPATH": str(REPO)})
    return subprocess.Popen(
        [sys.executable, "-m", "monitor", "alerts", "deliver", "--config", str(config), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _statuses(engine: Engine) -> list[tuple[str, str, str]]:
    with transaction(engine) as s:
        rows = s.scalars(select(AlertNotification).order_by(AlertNotification.id)).all()
        return [(r.status, r.group_key, r.idempotency_key) for r in rows]


def _queue(engine: Engine, config: Path) -> None:
    """Firing then resolved for 4 models: 8 rows in 4 groups, due now."""
    cfg = parse_config(yaml.safe_load(config.read_text()), env={}).alerts
    start = utcnow() - timedelta(seconds=10)
    ev = Evaluator(engine, cfg)
    ev.evaluate([drift(model=f"m{i}") for i in range(4)], start)
    ev.evaluate([], start + timedelta(seconds=5))
    assert len(_statuses(engine)) == 8


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    wait_until(condition, what, timeout=30, interval=0.02)


def _restart_delivers_all_once(engine: Engine, config: Path, receiver: RecordingReceiver) -> None:
    done = _worker(config, "--once")
    _out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    rows = _statuses(engine)
    assert [status for status, _, _ in rows] == ["sent"] * 8
    delivered = receiver.delivered()
    assert sorted(r.key for r in delivered) == sorted(key for _, _, key in rows)
    assert all(r.valid for r in receiver.requests)  # re-sends are signed too
    per_group: dict[str, list[str]] = defaultdict(list)
    for r in delivered:
        doc = r.json()
        per_group[doc["groupKey"]].append(doc["status"])
    assert sorted(per_group.values()) == [["firing", "resolved"]] * 4


@contextmanager
def _writes_blocked(engine: Engine) -> Iterator[None]:
    """Hold off every write to the outbox (SQLite's write lock; a PostgreSQL table lock)."""
    conn = engine.raw_connection()
    try:
        cur = conn.cursor()
        if engine.dialect.name == "sqlite":
            cur.execute("BEGIN IMMEDIATE")
        else:
            cur.execute("LOCK TABLE alert_notifications IN EXCLUSIVE MODE")
        yield
    finally:
        conn.rollback()
        conn.close()


def test_kill_9_after_sending_before_recording_resends_with_same_keys(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    receiver = RecordingReceiver(secret=SECRET)
    receiver.gate.clear()  # hold the answers until the worker cannot record them
    receiver.start()
    try:
        config = _config(tmp_path, database_url, receiver.url)
        _queue(engine, config)
        proc = _worker(config)
        _wait_for(lambda: bool(receiver.requests), "worker never sent anything")
        with _writes_blocked(engine):
            # The whole first batch (the 4 firing rows) is answered 200, but the worker cannot
            # record it: kill it there.
            receiver.gate.set()
            _wait_for(lambda: receiver.answered == 4, "first batch never answered")
            time.sleep(0.3)
            assert [s for s, _, _ in _statuses(engine)].count("sending") == 4
            proc.kill()
            proc.wait(timeout=10)
        assert [s for s, _, _ in _statuses(engine)].count("sending") == 4
        firing_keys = {r.key for r in receiver.requests}
        assert len(firing_keys) == 4

        time.sleep(1.2)  # the dead worker's lease runs out
        _restart_delivers_all_once(engine, config, receiver)
        sent = Counter(r.key for r in receiver.requests)
        assert {sent[k] for k in firing_keys} == {2}  # each re-sent once, with its own key
        assert len(sent) == 8 and sum(sent.values()) == 12
    finally:
        receiver.stop()


def test_kill_9_mid_send_then_restart_loses_nothing(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    receiver = RecordingReceiver(secret=SECRET)
    receiver.delay_s = 5.0  # hold the first answers so the kill lands between send and ack
    receiver.start()
    try:
        config = _config(tmp_path, database_url, receiver.url)
        _queue(engine, config)
        proc = _worker(config)
        _wait_for(lambda: bool(receiver.requests), "worker never sent anything")
        proc.kill()  # SIGKILL: no cleanup, no acknowledgement
        proc.wait(timeout=10)
        assert any(status == "sending" for status, _, _ in _statuses(engine))

        receiver.delay_s = 0.0
        time.sleep(1.2)  # the dead worker's lease runs out
        _restart_delivers_all_once(engine, config, receiver)
        assert len(receiver.requests) > len(receiver.delivered())  # the in-flight one came again
    finally:
        receiver.stop()
