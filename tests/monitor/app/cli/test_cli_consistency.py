"""CLI consistency a data scientist notices: tables with headers, --json, every config problem,
readable alert summaries, `models activate`, SQLite created by the first writing command."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from sqlalchemy.engine import Engine

from alerts._evaluator import Evaluator
from alerts._rules import render_annotations
from monitor.storage import utcnow
from tests.alerts.conftest import alerts_config, drift
from tests.conftest import run_cli


def test_config_check_lists_every_problem_with_did_you_mean(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        "databse_url: sqlite:///x.db\n"
        "api:\n  prot: 1\n"
        "guards:\n  presets:\n    int8: {max_flip_rat: 0.5}\n"
        "scheduler:\n  evaluate_interval_s: -3\n"
    )
    out = run_cli("config", "check", str(cfg))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert (
        f"modelwatch: error: {cfg}: unknown key 'databse_url' (did you mean 'database_url'?)"
        in lines
    )
    assert any("unknown key 'api.prot' (did you mean 'port'?)" in x for x in lines)
    assert any("'guards.presets.int8.max_flip_rat' (did you mean 'max_flip_rate'?)" in x
               for x in lines)  # fmt: skip
    assert any("invalid value for 'scheduler.evaluate_interval_s'" in x for x in lines)
    assert not any("more problem" in x for x in lines) and len(lines) == 4
    # other commands still stop at one line naming the first problem and the count
    serve = run_cli("serve", "--config", str(cfg))
    assert serve.returncode == 2 and "(and 3 more problems)" in serve.stderr


def test_alert_summary_of_the_overall_slice_reads_overall() -> None:
    signal = drift()
    text = render_annotations({"s": "{column} drifted in {slice} ({value:.3f})"},
                              {"column": "f0"}, signal)  # fmt: skip
    assert text["s"] == "f0 drifted in overall (0.300)"
    sliced = render_annotations({"s": "in {slice}"}, {"slice": "region=eu"}, signal)
    assert sliced["s"] == "in region=eu"


def test_alerts_list_is_a_table(sqlite_engine: Engine, tmp_path: Path) -> None:
    db = ("--database-url", str(sqlite_engine.url))
    assert run_cli("alerts", "list", *db).stdout.strip() == "no alerts"
    now = utcnow()
    ev = Evaluator(sqlite_engine, alerts_config())
    ev.evaluate([drift()], now - timedelta(seconds=30))
    ev.evaluate([drift()], now)
    out = run_cli("alerts", "list", *db)
    header, row = out.stdout.splitlines()
    assert header.split() == ["rule", "state", "value", "active_since", "muted_by", "labels",
                              "summary"]  # fmt: skip
    assert "FeatureDrift" in row and "column=amount" in row and "fraud column amount drifted" in row
    assert "{" not in row and "None" not in row


def test_models_activate_list_table_and_sqlite_created_on_first_write(tmp_path: Path) -> None:
    db = tmp_path / "fresh.db"
    url = ("--database-url", f"sqlite:///{db}")
    artifact = tmp_path / "m.onnx"
    artifact.write_bytes(b"not really onnx, only hashed")
    assert run_cli("models", "list", *url).returncode == 2 and not db.exists()
    for version in ("1", "2"):
        out = run_cli("models", "register", "--model", "fraud", "--version", version,
                      str(artifact), *url)  # fmt: skip
        assert out.returncode == 0, out.stderr
    first = run_cli("models", "activate", "--model", "fraud", "--version", "1", *url)
    assert first.returncode == 0 and "fraud: 1 is active" in first.stdout
    listed = run_cli("models", "list", *url).stdout.splitlines()
    assert listed[0].split()[:3] == ["model", "active", "last_known_good"]
    assert listed[1].split() == ["fraud", "1", "-", "1,2", "-"]  # no settings recorded
    assert json.loads(run_cli("models", "list", "--json", *url).stdout)[0]["active"] == "1"
    assert run_cli("baseline", "list", *url).stdout.strip() == "no baselines"
    assert json.loads(run_cli("baseline", "list", "--json", *url).stdout) == []


def test_silences_list_is_a_table(sqlite_engine: Engine) -> None:
    db = ("--database-url", str(sqlite_engine.url))
    assert run_cli("silences", "add", "model=fraud", "--author", "ana", "--comment", "INC-7",
                   "--duration", "1h", *db).returncode == 0  # fmt: skip
    header, row = run_cli("silences", "list", *db).stdout.splitlines()
    assert header.split() == ["id", "matchers", "starts_at", "ends_at", "author", "comment"]
    assert row.split()[1] == 'model="fraud"' and row.split()[-2:] == ["ana", "INC-7"]
