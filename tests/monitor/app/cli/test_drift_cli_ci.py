"""`modelwatch drift` in CI: column roles, safe exits, argument ranges, `-`, stored baselines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import run_cli


def _frame(seed: int, n: int, shift: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": np.arange(seed * 100_000, seed * 100_000 + n),
            "user": [f"u{seed}-{i}" for i in range(n)],
            "amount": rng.normal(100 + shift, 20, n),
            "label": rng.integers(0, 2, n),
            "score": rng.random(n),
            "ts": pd.date_range("2026-01-01", periods=n, freq="min").astype(str),
            "region": rng.choice(["eu", "us"], n),
        }
    )


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    ref, cur = tmp_path / "ref.parquet", tmp_path / "cur.csv"
    _frame(1, 3000).to_parquet(ref)
    _frame(2, 2000, shift=10.0).to_csv(cur, index=False)
    return ref, cur


def _columns(path: Path) -> set[str]:
    return {r["column"] for r in json.loads(path.read_text())["results"]}


def test_id_like_columns_left_out_with_a_warning(pair: tuple[Path, Path], tmp_path: Path) -> None:
    out = run_cli("drift", *map(str, pair), "--json", str(tmp_path / "d.json"))
    assert out.returncode == 0, out.stderr
    assert "DRIFT id" not in out.stdout and "DRIFT amount" in out.stdout
    assert "warning: column 'id' is unique per row" in out.stderr
    assert "warning: column 'user' is unique per row" in out.stderr
    # floats are unique per row too but are features; the timestamp strings look like ids
    assert _columns(tmp_path / "d.json") == {"amount", "label", "score", "region"}


def test_roles_name_and_exclude_columns(pair: tuple[Path, Path], tmp_path: Path) -> None:
    out = run_cli("drift", *map(str, pair), "--id-column", "id", "--timestamp", "ts",
                  "--exclude", "user,region", "--target", "label", "--prediction", "score",
                  "--json", str(tmp_path / "d.json"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "warning" not in out.stderr
    assert _columns(tmp_path / "d.json") == {"amount", "label", "score"}
    named = run_cli("drift", *map(str, pair), "--columns", "id,amount", "--json", "-")
    assert {r["column"] for r in json.loads(named.stdout)["results"]} == {"id", "amount"}
    bad = run_cli("drift", *map(str, pair), "--target", "nope")
    assert bad.returncode == 2 and "column 'nope' not found" in bad.stderr


def test_json_dash_is_stdout(pair: tuple[Path, Path], tmp_path: Path) -> None:
    out = run_cli("drift", *map(str, pair), "--id-column", "id", "--json", "-", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["n_current"] == 2000 and not (tmp_path / "-").exists()
    assert "dataset_drift=" in out.stderr  # the summary moves out of the way


@pytest.mark.parametrize("rows", [0, 12])
def test_empty_or_tiny_current_is_never_a_pass(
    pair: tuple[Path, Path], tmp_path: Path, rows: int
) -> None:
    ref, _ = pair
    cur = tmp_path / "small.csv"
    _frame(3, 50).head(rows).to_csv(cur, index=False)
    out = run_cli("drift", str(ref), str(cur), "--exclude", "id,user,ts", "--fail-on-drift")
    assert out.returncode == 2
    why = "is empty" if rows == 0 else "too small for any verdict"
    assert why in out.stderr and "Traceback" not in out.stderr
    flagged = run_cli("drift", str(ref), str(cur), "--exclude", "id,user,ts",
                      "--fail-on-insufficient")  # fmt: skip
    assert flagged.returncode == 1


@pytest.mark.parametrize(
    "args",
    # --threshold-k and --reference-chunks: see test_thresholds_wiring
    [["--alpha", "2"], ["--alpha", "0"], ["--alpha", "nan"], ["--bins", "1"], ["--top-k", "0"]],
)  # fmt: skip
def test_argument_ranges(pair: tuple[Path, Path], args: list[str]) -> None:
    out = run_cli("drift", *map(str, pair), *args)
    assert out.returncode == 2 and args[-2] in out.stderr and "Traceback" not in out.stderr


def test_continuous_slice_column_refused(pair: tuple[Path, Path]) -> None:
    out = run_cli("drift", *map(str, pair), "--slice-by", "amount")
    assert out.returncode == 2
    assert "--slice-by column 'amount' is continuous" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_file_against_stored_baseline(pair: tuple[Path, Path], tmp_path: Path) -> None:
    ref, cur = pair
    db = ["--database-url", f"sqlite:///{tmp_path / 'm.db'}"]
    made = run_cli("baseline", "create", "--model", "fraud", "--version", "3", "--slice-by",
                   "region", "--exclude", "id,user,ts", str(ref), *db)  # fmt: skip
    assert made.returncode == 0, made.stderr  # the SQLite file is created and migrated
    assert "columns: amount, label, score, region; sliced by region" in made.stdout
    out = run_cli("drift", str(cur), "--baseline", "default", "--model", "fraud", *db,
                  "--json", str(tmp_path / "b.json"), "--html", str(tmp_path / "b.html"),
                  "--fail-on-drift")  # fmt: skip
    assert out.returncode == 1, out.stderr
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["n_reference"] == 3000 and doc["n_current"] == 2000
    assert {r["column"] for r in doc["results"]} == {"amount", "label", "score", "region"}
    assert {"region": "eu"} in [r["slice"] for r in doc["results"]]
    assert "baseline &#x27;default&#x27; of fraud version 3" in (tmp_path / "b.html").read_text()
    missing = run_cli("drift", str(cur), "--baseline", "nope", "--model", "fraud", *db)
    assert missing.returncode == 2 and "no baseline 'nope' for model 'fraud'" in missing.stderr
    both = run_cli("drift", str(ref), str(cur), "--baseline", "default", "--model", "fraud", *db)
    assert both.returncode == 2 and "with --baseline give one file" in both.stderr


def test_reading_commands_leave_no_empty_database(tmp_path: Path) -> None:
    db = tmp_path / "never.db"
    out = run_cli("baseline", "list", "--database-url", f"sqlite:///{db}")
    assert out.returncode == 2 and "no database at" in out.stderr
    assert not db.exists()


def test_roles_from_a_models_config(pair: tuple[Path, Path], tmp_path: Path) -> None:
    ref, cur = pair
    cfg = tmp_path / "mw.yaml"
    cfg.write_text(
        f"database_url: sqlite:///{tmp_path / 'c.db'}\n"
        "models:\n  - name: fraud\n"
        "    columns: {id: id, timestamp: ts, exclude: [user], target: label}\n"
    )
    made = run_cli("baseline", "create", "--model", "fraud", "--version", "1", str(ref),
                   "--config", str(cfg), "--exclude", "region")  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "warning" not in made.stderr and "3 columns" in made.stdout  # amount, label, score
    out = run_cli("drift", str(ref), str(cur), "--model", "fraud", "--config", str(cfg),
                  "--json", "-")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert {r["column"] for r in json.loads(out.stdout)["results"]} == {
        "amount", "label", "score", "region"
    }  # fmt: skip
    cfg.write_text("models:\n  - name: fraud\n    columns: {ids: [id]}\n")
    bad = run_cli("config", "check", str(cfg))
    assert bad.returncode == 2 and "unknown key 'models[0].columns.ids' (did you mean 'id'?)" in (
        bad.stderr
    )
