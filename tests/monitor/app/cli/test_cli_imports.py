"""A command line that answers at once and needs only what it uses.

Every `--help` page (the whole click tree, walked) loads click and the command declarations and
no other third-party library; a dry command loads only the libraries it needs; and a command
needs only the configuration it uses (the API tokens' variables are `serve`'s alone). Checked on
`sys.modules` of a fresh interpreter, never on a timer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from monitor.app.cli.main import cli
from tests.conftest import REPO, run_cli, run_cli_process

# What the issue names; a help page loads none of these, nor any other third-party library.
HEAVY = ("scipy", "pandas", "alembic", "sqlalchemy", "onnxruntime", "evidently", "sklearn",
         "pyarrow", "numpy", "pydantic", "fastapi", "onnx", "rich", "httpx")  # fmt: skip

# Runs in a fresh interpreter: each help page in turn, in-process (modules only accumulate, so
# the first page that loads a library is the one named), then the third-party top-level modules
# loaded since start-up other than click.
WALK = """
import json, sys
first = {"monitor", "collectors", "alerts", "guards", "dashboards", "migrations", "click"}
started = {name.split(".")[0] for name in sys.modules}
def loaded():
    tops = {name.split(".")[0] for name in sys.modules} - started - first
    return sorted(t for t in tops if t not in sys.stdlib_module_names and not t.startswith("_"))
import click
from click.testing import CliRunner
from monitor.app.cli.main import cli
runner = CliRunner()
pages = []
def walk(path, command):
    result = runner.invoke(cli, [*path, "--help"])
    pages.append({"page": " ".join(["modelwatch", *path]), "exit": result.exit_code,
                  "loaded": loaded(), "output": result.output})
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            walk([*path, name], command.get_command(ctx, name))
walk([], cli)
print(json.dumps(pages))
"""

# Runs one command in a fresh interpreter, as `modelwatch ARGS`, and reports what it loaded.
DRY = """
import json, sys
from monitor.app.cli.main import main
code = 0
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"exit": code, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _python(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MODELWATCH_DATABASE_URL"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd or REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _dry(*args: str, cwd: Path) -> tuple[int, set[str], str]:
    """Exit status, top-level modules loaded and stderr of `modelwatch ARGS` in a fresh process."""
    out = _python(DRY, *args, cwd=cwd)
    doc = json.loads(out.stdout.splitlines()[-1])
    return doc["exit"], set(doc["modules"]), out.stderr


def test_every_help_page_loads_no_third_party_library_but_click() -> None:
    out = _python(WALK)
    assert out.returncode == 0, out.stderr
    pages = json.loads(out.stdout)
    assert len(pages) >= 30  # the walk reached every command and subcommand
    failed = [p["page"] for p in pages if p["exit"] != 0 or "Usage:" not in p["output"]]
    assert not failed, f"help pages that did not answer: {failed}"
    heavy = [f"{p['page']} --help loads {', '.join(p['loaded'])}" for p in pages if p["loaded"]]
    assert not heavy, "\n".join(heavy[:1] + [f"(first of {len(heavy)}; HEAVY: {HEAVY})"])


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    found = [(" ".join(["modelwatch", *path]), command)]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            found += _commands(sub, (*path, name))
    return found


def test_every_command_and_option_has_help_text() -> None:
    missing = []
    for name, command in _commands(cli):
        if not (command.help or command.short_help):
            missing.append(f"{name}: the command has no help")
        missing += [
            f"{name}: option {param.opts[0]} has no help"
            for param in command.params
            if isinstance(param, click.Option) and not param.hidden and not param.help
        ]
    assert not missing, "\n".join(missing)


CONFIG = """\
database_url: sqlite:///{db}
models:
  - name: fraud
api:
  tokens:
    - name: ops
      scopes: [admin]
      token_env: MW_TEST_CLI_UNSET_TOKEN
"""


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    """A config whose API token's variable is not set (and a database at head)."""
    path = tmp_path / "mw.yaml"
    path.write_text(CONFIG.format(db=tmp_path / "mw.db"), encoding="utf-8")
    up = run_cli("db", "upgrade", "--config", str(path), cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    return path


def test_commands_that_read_the_database_run_without_the_api_secrets(config_file: Path) -> None:
    assert "MW_TEST_CLI_UNSET_TOKEN" not in os.environ
    cfg = str(config_file)
    for args in (("status", "--config", cfg), ("config", "check", cfg),
                 ("alerts", "list", "--config", cfg)):  # fmt: skip
        out = run_cli(*args, cwd=config_file.parent)
        assert out.returncode == 0, (args, out.stderr)


def test_serve_names_the_missing_token_variable_in_one_line(config_file: Path) -> None:
    out = run_cli_process("serve", "--config", str(config_file), "--port", "0")
    assert out.returncode == 2
    assert out.stderr == (
        f"modelwatch: error: {config_file}: invalid value for 'api.tokens[0].token_env': "
        "environment variable MW_TEST_CLI_UNSET_TOKEN is not set (or is empty)\n"
    )


# Spawns a fresh interpreter per command (~5 s): the full lane's.
@pytest.mark.slow
def test_dry_commands_load_only_what_they_need(config_file: Path, tmp_path: Path) -> None:
    never = {"onnxruntime", "evidently", "sklearn", "fastapi"}
    code, modules, err = _dry("config", "check", str(config_file), cwd=tmp_path)
    assert code == 0, err
    # The registries' names only: not delivery's httpx, the daemon's rich, the intake's anyio.
    assert not modules & {*never, "scipy", "pandas", "pyarrow", "alembic", "httpx", "rich", "anyio"}
    code, modules, err = _dry("status", "--config", str(config_file), cwd=tmp_path)
    assert code == 0, err
    assert not modules & {*never, "scipy", "pandas", "pyarrow", "httpx", "rich", "anyio"}
    code, modules, err = _dry("drift", "missing.parquet", "missing.csv", cwd=tmp_path)
    assert (code, err) == (2, "modelwatch: error: missing.parquet: file not found\n")
    assert not modules & {*never, "scipy", "pandas", "pyarrow", "alembic", "sqlalchemy"}
    rows = "x,c\n" + "".join(f"{i % 50},{'ab'[i % 2]}\n" for i in range(200))
    for name in ("ref.csv", "cur.csv"):
        (tmp_path / name).write_text(rows, encoding="utf-8")
    code, modules, err = _dry("drift", "ref.csv", "cur.csv", "--json", "out.json", cwd=tmp_path)
    assert code == 0, err
    # Two files compared: no database, config models, progress bars (no terminal) or HTTP, and
    # neither pandas (one file is read by pyarrow into numpy) nor scipy (detectors._special).
    assert not modules & {*never, "alembic", "sqlalchemy", "pydantic", "yaml", "rich", "httpx",
                          "pandas", "scipy"}  # fmt: skip
    labels = [("ab"[i % 2] * 3) for i in range(200)]
    pq.write_table(pa.table({"x": [i % 50 for i in range(200)], "c": labels}),
                   tmp_path / "ref.parquet")  # fmt: skip
    code, modules, err = _dry("drift", "ref.parquet", "cur.csv", "--json", "-", "--slice-by", "c",
                              "--thresholds", "reference", cwd=tmp_path)  # fmt: skip
    assert code == 0, err
    assert not modules & {*never, "alembic", "sqlalchemy", "pandas", "scipy", "rich", "httpx"}
    code, modules, err = _dry("serve", "--config", str(config_file), cwd=tmp_path)
    assert code == 2 and "MW_TEST_CLI_UNSET_TOKEN" in err
    assert not modules & {*never, "onnx", "scipy", "pandas", "pyarrow"}
