"""The foundation CLI as a user meets it: version, db upgrade/current, config check."""

from __future__ import annotations

from pathlib import Path

from monitor import __version__
from tests.conftest import run_cli, run_cli_process
from tests.services.net import free_port

VALID = """\
database_url: sqlite:///modelwatch.db
models:
  - name: fraud
    slices: [region]
sources:
  - name: stream
    type: kafka
    bootstrap_servers: 127.0.0.1:19092
    topic: predictions
    group_id: modelwatch
    api_version: "0.9"
  - name: logs
    type: jsonl
    path: /var/log/serving/*.jsonl
"""


def test_version() -> None:
    out = run_cli_process("--version")  # the `python -m monitor` entry point itself
    assert out.returncode == 0
    assert __version__ in out.stdout


def test_help_lists_only_working_commands() -> None:
    out = run_cli("--help")
    assert out.returncode == 0
    assert "db" in out.stdout and "config" in out.stdout


def test_db_upgrade_then_current_says_head(database_url: str, tmp_path: Path) -> None:
    before = run_cli("db", "current", "--database-url", database_url, cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    assert "not at head" in before.stdout
    up = run_cli("db", "upgrade", "--database-url", database_url, cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    assert "(head)" in up.stdout
    cur = run_cli("db", "current", "--database-url", database_url, cwd=tmp_path)
    assert cur.returncode == 0
    assert cur.stdout.strip().endswith("(head)")
    again = run_cli("db", "upgrade", "--database-url", database_url, cwd=tmp_path)
    assert "already at" in again.stdout


def test_default_database_is_sqlite_file_in_working_directory(tmp_path: Path) -> None:
    out = run_cli("db", "upgrade", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "modelwatch.db").exists()


def test_environment_overrides_database_url(tmp_path: Path) -> None:
    target = tmp_path / "from-env.db"
    out = run_cli(
        "db", "upgrade", cwd=tmp_path, env={"MODELWATCH_DATABASE_URL": f"sqlite:///{target}"}
    )
    assert out.returncode == 0, out.stderr
    assert target.exists()
    assert not (tmp_path / "modelwatch.db").exists()


def test_database_url_from_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "mw.yaml"
    cfg.write_text(f"database_url: sqlite:///{tmp_path / 'cfg.db'}\n")
    out = run_cli("db", "upgrade", "--config", str(cfg), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "cfg.db").exists()


def test_unreachable_database_is_one_line_exit_2(tmp_path: Path) -> None:
    url = f"postgresql://nobody@127.0.0.1:{free_port()}/none"
    out = run_cli("db", "current", "--database-url", url, cwd=tmp_path)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1
    assert "cannot reach database" in out.stderr


def test_unsupported_url_is_rejected(tmp_path: Path) -> None:
    out = run_cli("db", "upgrade", "--database-url", "mysql://x@localhost/db", cwd=tmp_path)
    assert out.returncode == 2
    assert "unsupported backend 'mysql'" in out.stderr


def test_config_check_accepts_documented_example(tmp_path: Path) -> None:
    cfg = tmp_path / "mw.yaml"
    cfg.write_text(VALID)
    out = run_cli("config", "check", str(cfg))
    assert out.returncode == 0, out.stderr
    assert "1 model(s), 2 source(s)" in out.stdout


def test_config_check_names_misspelled_key_and_file(tmp_path: Path) -> None:
    cfg = tmp_path / "mw.yaml"
    cfg.write_text(VALID.replace("    slices:", "    slicez:"))
    out = run_cli("config", "check", str(cfg))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert str(cfg) in out.stderr
    assert "unknown key 'models[0].slicez'" in out.stderr


def test_config_check_names_bad_key_inside_a_source(tmp_path: Path) -> None:
    cfg = tmp_path / "mw.yaml"
    cfg.write_text(VALID.replace("    topic:", "    topik:"))
    out = run_cli("config", "check", str(cfg))
    assert out.returncode == 2
    assert "sources[0].topik" in out.stderr


def test_config_check_reports_yaml_line(tmp_path: Path) -> None:
    cfg = tmp_path / "mw.yaml"
    cfg.write_text("models:\n  - name: [unclosed\n")
    out = run_cli("config", "check", str(cfg))
    assert out.returncode == 2
    assert "invalid YAML at line" in out.stderr


def test_config_check_missing_file(tmp_path: Path) -> None:
    out = run_cli("config", "check", str(tmp_path / "nope.yaml"))
    assert out.returncode == 2
    assert "nope.yaml: config file not found" in out.stderr


def test_config_check_names_an_unknown_registry_name(tmp_path: Path) -> None:
    cfg = tmp_path / "mw.yaml"
    cfg.write_text("models:\n  - name: fraud\n    drift: {methods: [pis]}\n")
    out = run_cli("config", "check", str(cfg))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == (
        f"modelwatch: error: {cfg}: invalid value for 'models[0].drift.methods[0]': "
        "unknown drift method 'pis' (did you mean 'psi'?); valid: chi2, hellinger, "
        "jensen_shannon, ks, l_infinity, missing_rate, psi, wasserstein"
    )
