"""Alert states and silences over HTTP, against a real server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from alerts import Evaluator, Signal
from alerts.base import AlertSnapshot, Notification
from alerts.receivers.webhook import alertmanager_v4
from monitor.config.alerts import AlertsConfig, RuleConfig
from tests.monitor.app.daemon.conftest import ServerProcess, auth, db_engine


def test_alerts_lists_states_from_the_evaluator(idle_server: ServerProcess, tmp_path: Path) -> None:
    # The server's own evaluation would resolve this alert (no drift results back it): it ran
    # once at start and does not run again during the test.
    url = f"{idle_server.url}/v1/alerts"
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers=auth("MW_T_INGEST")).status_code == 403
    assert httpx.get(url, headers=auth("MW_T_READ")).json() == {"alerts": [], "next_cursor": None}

    rule = RuleConfig.model_validate({"name": "feature_drift", "kind": "drift"})
    evaluator = Evaluator(db_engine(tmp_path), AlertsConfig(rules=[rule]))
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    signals = [
        Signal("drift", {"model": "fraud", "column": c}, v, 0.2, v > 0.2, now)
        for c, v in (("amount", 0.5), ("age", 0.1))
    ]
    evaluator.evaluate(signals, now)

    alerts = httpx.get(url, headers=auth("MW_T_READ")).json()["alerts"]
    assert [(a["labels"]["column"], a["state"], a["value"]) for a in alerts] == [
        ("amount", "firing", 0.5)
    ]
    assert alerts[0]["rule"] == "feature_drift"
    firing = httpx.get(url, params={"state": "firing"}, headers=auth("MW_T_READ")).json()
    assert len(firing["alerts"]) == 1
    pending = httpx.get(url, params={"state": "pending"}, headers=auth("MW_T_READ")).json()
    assert pending == {"alerts": [], "next_cursor": None}
    bad = httpx.get(url, params={"state": "burning"}, headers=auth("MW_T_READ"))
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "query.state"

    one = httpx.get(f"{url}/{alerts[0]['fingerprint']}", headers=auth("MW_T_READ"))
    assert one.status_code == 200 and one.json() == alerts[0]
    missing = httpx.get(f"{url}/ffffffff", headers=auth("MW_T_READ"))
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"

    # The webhook's generatorURL, built on alerts.external_url, opens that alert (read scope).
    snapshot = AlertSnapshot(alerts[0]["fingerprint"], "firing", {}, {}, now, None)
    note = Notification("hook", "g", {}, (snapshot,), idle_server.url + "/", now)
    generator = alertmanager_v4(note)["alerts"][0]["generatorURL"]
    assert httpx.get(generator).status_code == 401
    opened = httpx.get(generator, headers=auth("MW_T_READ"))
    assert opened.status_code == 200 and opened.json()["labels"]["column"] == "amount"
    # A rule without annotations still says what moved.
    assert "column amount" in alerts[0]["annotations"]["summary"]
    assert "0.5 against threshold 0.2" in alerts[0]["annotations"]["description"]


def test_silence_lifecycle(server: ServerProcess) -> None:
    url = f"{server.url}/v1/silences"
    body = {"matchers": ["model=fraud", "column=~am.*"], "author": "ana", "comment": "INC-42"}
    assert httpx.post(url, json=body).status_code == 401
    assert httpx.post(url, json=body, headers=auth("MW_T_READ")).status_code == 403
    before = datetime.now(UTC)
    created = httpx.post(url, json={**body, "duration": "30m"}, headers=auth("MW_T_ADMIN"))
    assert created.status_code == 201, created.text
    silence = created.json()
    assert silence["matchers"] == ['model="fraud"', 'column=~"am.*"']
    ends = datetime.fromisoformat(silence["ends_at"])
    assert before + timedelta(minutes=29) < ends < before + timedelta(minutes=31)

    listed = httpx.get(url, headers=auth("MW_T_READ")).json()["silences"]
    assert [s["id"] for s in listed] == [silence["id"]]
    one = f"{url}/{silence['id']}"
    assert httpx.delete(one, headers=auth("MW_T_READ")).status_code == 403
    expired = httpx.delete(one, headers=auth("MW_T_ADMIN"))
    assert expired.status_code == 200
    assert datetime.fromisoformat(expired.json()["ends_at"]) < ends
    assert httpx.get(url, headers=auth("MW_T_READ")).json() == {"silences": [], "next_cursor": None}
    everything = httpx.get(url, params={"all": "true"}, headers=auth("MW_T_READ")).json()
    assert [s["id"] for s in everything["silences"]] == [silence["id"]]
    again = httpx.delete(one, headers=auth("MW_T_ADMIN"))
    assert again.status_code == 409 and "already expired" in again.json()["detail"]
    assert httpx.delete(f"{url}/999", headers=auth("MW_T_ADMIN")).status_code == 404


def test_silence_validation_names_the_field(server: ServerProcess) -> None:
    url = f"{server.url}/v1/silences"
    admin = auth("MW_T_ADMIN")
    good = {"matchers": ["model=fraud"], "author": "ana", "comment": "x"}
    cases = {
        "body.matchers": {**good, "matchers": ["model"]},
        "body.duration": {**good, "duration": "forever"},
        "body.author": {k: v for k, v in good.items() if k != "author"},
        "body.colour": {**good, "colour": "red"},
    }
    # RE2 refuses what needs backtracking; a duration past 100 years is refused, not a 500.
    refused = {
        "body.matchers": [
            {**good, "matchers": ["model=fraud", "column=~(a)\\1"]},
            {**good, "matchers": ["column=~(?=a)b"]},
        ],
        "body.duration": [{**good, "duration": "9" * 400}, {**good, "duration": "9" * 400 + "d"}],
    }
    cases.update({f"{field}#{i}": b for field, bs in refused.items() for i, b in enumerate(bs)})
    for field, body in cases.items():
        resp = httpx.post(url, json=body, headers=admin)
        assert resp.status_code == 422, (field, resp.text)
        assert resp.json()["errors"][0]["field"] == field.partition("#")[0]
        assert "Traceback" not in resp.text
    not_json = httpx.post(url, content=b"{", headers={**admin, "content-type": "application/json"})
    assert not_json.status_code == 422
