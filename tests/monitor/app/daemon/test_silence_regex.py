"""A silence regex cannot hang `serve`: matchers run on RE2 (linear time), before and after a
restart that reloads the stored silence, on both database backends."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy import select

from alerts import Evaluator, Signal
from migrations import upgrade
from monitor.config.alerts import AlertsConfig, RuleConfig
from monitor.storage import JobRun, make_engine, session_factory, utcnow
from tests.monitor.app.daemon.conftest import ServerProcess, auth, write_config
from tests.waiting import wait_until

# Backtracking engines take minutes on `(.*){20}X` against a 40-character label that does not
# end in X; RE2 answers in microseconds.
RULE = {"name": "FeatureDriftOnTheFraudModelAmountColumn", "kind": "drift", "keep_firing_for": "1h"}
EXTRA = f"""
alerts:
  rules:
    - {{name: {RULE["name"]}, kind: drift, keep_firing_for: 1h}}
"""


def _seed_firing_alert(url: str) -> None:
    engine = make_engine(url)
    upgrade(engine)
    rule = RuleConfig.model_validate(RULE)
    now = utcnow()
    signal = Signal("drift", {"model": "fraud", "column": "amount"}, 0.5, 0.2, True, now)
    Evaluator(engine, AlertsConfig(rules=[rule])).evaluate([signal], now)
    engine.dispose()


def _muted_by(server: ServerProcess) -> list[str | None]:
    alerts = httpx.get(f"{server.url}/v1/alerts", headers=auth("MW_T_READ"), timeout=2)
    return [a["muted_by"] for a in alerts.json()["alerts"]]


def _wait_muted(server: ServerProcess, expected: str | None) -> None:
    """Poll until the alert shows `expected`; /healthz must answer within a second meanwhile."""

    def muted() -> bool:
        assert httpx.get(f"{server.url}/healthz", timeout=1).status_code == 200
        return _muted_by(server) == [expected]

    wait_until(muted, f"the alert to be muted_by {expected!r}", timeout=30, interval=0.3)


def _finished_evaluations_since(url: str, since: object) -> int:
    engine = make_engine(url)
    with session_factory(engine)() as s:
        query = select(JobRun).where(JobRun.job == "evaluate", JobRun.status == "done")
        rows = [r for r in s.scalars(query) if r.finished_at is not None and r.claimed_at > since]
    engine.dispose()
    return len(rows)


def test_pathological_silence_regex_never_hangs_ticks_or_restarts(
    database_url: str, tmp_path: Path
) -> None:
    _seed_firing_alert(database_url)
    config = write_config(tmp_path, database_url, EXTRA)
    url_of = "{}/v1/silences".format
    admin = auth("MW_T_ADMIN")
    body = {"author": "ana", "comment": "INC-7", "duration": "2h"}
    server = ServerProcess(config)
    try:
        server.wait_ready()
        evil = httpx.post(
            url_of(server.url),
            json={**body, "matchers": ['alertname=~"(.*){20}X"']},
            headers=admin,
            timeout=30,
        )
        assert evil.status_code == 201, evil.text
        created_at = utcnow()
        # Checked after the evil one (silences go in id order), so muting proves ticks get past it.
        good = httpx.post(
            url_of(server.url),
            json={**body, "matchers": ["alertname=~Feature.*Column"]},
            headers=admin,
            timeout=30,
        )
        assert good.status_code == 201, good.text
        _wait_muted(server, f"silence:{good.json()['id']}")
        # The tick that muted the alert records its own end in a later transaction: wait for it.
        wait_until(
            lambda: _finished_evaluations_since(database_url, created_at) >= 1,
            "an evaluate tick claimed after the silences to finish",
            timeout=30,
        )
        assert server.terminate() == 0
        restarted = ServerProcess(config)
        try:
            restarted.wait_ready()
            # 30 s, not httpx's 5: a just-restarted `serve` on a loaded machine took longer once
            expire = httpx.delete(
                f"{url_of(restarted.url)}/{good.json()['id']}", headers=admin, timeout=30
            )
            assert expire.status_code == 200
            _wait_muted(restarted, None)  # a tick ran with the stored evil silence and finished
            stored = httpx.get(url_of(restarted.url), headers=auth("MW_T_READ"), timeout=30).json()
            assert [s["id"] for s in stored["silences"]] == [evil.json()["id"]]
        finally:
            assert restarted.terminate() == 0
    finally:
        server.terminate()
