"""`modelwatch silences` and `modelwatch alerts`, run as a user would, in a subprocess."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import yaml
from sqlalchemy.engine import Engine

from alerts._evaluator import Evaluator
from monitor.storage import utcnow
from tests.alerts.conftest import alerts_config, drift
from tests.alerts.receiver import RecordingReceiver
from tests.conftest import run_cli


def test_silences_add_list_expire(database_url: str, engine: Engine) -> None:
    db = ("--database-url", database_url)
    added = run_cli(
        "silences",
        "add",
        "model=fraud",
        'column=~"am.*"',
        "--author",
        "ana",
        "--comment",
        "INC-7",
        "--duration",
        "1h",
        *db,
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("silence 1 until")
    listed = json.loads(run_cli("silences", "list", "--json", *db).stdout)
    assert [(s["id"], s["matchers"], s["author"]) for s in listed] == [
        (1, ['model="fraud"', 'column=~"am.*"'], "ana")
    ]
    assert run_cli("silences", "expire", "1", *db).returncode == 0
    assert json.loads(run_cli("silences", "list", "--json", *db).stdout) == []
    assert len(json.loads(run_cli("silences", "list", "--all", "--json", *db).stdout)) == 1


def test_user_mistakes_exit_2_with_one_line(sqlite_engine: Engine, tmp_path: Path) -> None:
    db = ("--database-url", str(sqlite_engine.url))
    cases = [
        (
            ("silences", "add", "model~x", "--author", "a", "--comment", "c", *db),
            "matcher 'model~x'",
        ),
        (
            (
                "silences",
                "add",
                "a=b",
                "--author",
                "a",
                "--comment",
                "c",
                "--duration",
                "soon",
                *db,
            ),
            "--duration",
        ),
        (
            ("silences", "add", "a=~(x)\\1", "--author", "a", "--comment", "c", *db),
            "matcher 'a=~(x)\\\\1': invalid regex",
        ),
        (
            ("silences", "add", "a=~(?=x)", "--author", "a", "--comment", "c", *db),
            "RE2 syntax",
        ),
        (
            ("silences", "add", "a=b", "--author", "a", "--comment", "c", "--duration", "9" * 400)
            + db,
            "characters) is too long (at most 36500d)",
        ),
        (("silences", "expire", "42", *db), "no silence with id 42"),
        (
            ("alerts", "deliver", "--config", str(tmp_path / "missing.yaml")),
            "config file not found",
        ),
    ]
    for args, expected in cases:
        result = run_cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert expected in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_alerts_list_and_deliver_once(sqlite_engine: Engine, tmp_path: Path) -> None:
    receiver = RecordingReceiver(secret="k")
    receiver.start()
    try:
        url = str(sqlite_engine.url)
        hook = {"name": "hook", "type": "webhook", "url": receiver.url, "secret_env": "HOOK_KEY"}
        data = {
            "database_url": url,
            "alerts": {
                "receivers": [hook],
                "rules": [{"name": "FeatureDrift", "kind": "drift", "receivers": ["hook"]}],
            },
        }
        config = tmp_path / "mw.yaml"
        config.write_text(yaml.safe_dump(data))
        now = utcnow()
        ev = Evaluator(sqlite_engine, alerts_config(**data["alerts"]))  # type: ignore[arg-type]
        ev.evaluate([drift()], now - timedelta(seconds=30))
        ev.evaluate([drift()], now)
        states = json.loads(run_cli("alerts", "list", "--json", "--config", str(config)).stdout)
        assert [(s["rule"], s["state"], s["labels"]["column"]) for s in states] == [
            ("FeatureDrift", "firing", "amount")
        ]
        missing = run_cli("alerts", "deliver", "--config", str(config), "--once")
        assert missing.returncode == 2 and "HOOK_KEY" in missing.stderr
        done = run_cli(
            "alerts", "deliver", "--config", str(config), "--once", env={"HOOK_KEY": "k"}
        )
        assert done.returncode == 0, done.stderr
        assert "sent 1" in done.stdout
        assert [r.valid for r in receiver.delivered()] == [True]
        outbox = json.loads(
            run_cli("alerts", "list", "--outbox", "--json", "--config", str(config)).stdout
        )
        assert [o["status"] for o in outbox] == ["sent"]
    finally:
        receiver.stop()
