"""Baselines: stored ProfileSets load back identical, on SQLite and PostgreSQL; the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy.engine import Engine

from monitor.baselines.store import list_baselines, load_baseline, save_baseline
from monitor.errors import ConflictError, NotFoundError
from monitor.profiles import profile_frame, specs_for
from tests.conftest import run_cli


def _frame(seed: int, n: int = 2000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "amount": rng.lognormal(3, 1, size=n),
            "channel": rng.choice(["web", "app", "pos"], size=n),
            "region": rng.choice(["eu", "us"], size=n),
        }
    )


def test_save_and_load_round_trip(engine: Engine) -> None:
    df = _frame(1)
    ps = profile_frame(df, specs_for(["amount", "channel"], df), slice_by=["region"])
    save_baseline(engine, "fraud", "3", ps, source="ref.parquet")
    back = load_baseline(engine, "fraud", "3")
    assert back.rows == ps.rows and back.slice_by == ("region",)
    assert back.columns == ["amount", "channel"]
    for key, prof in ps.profiles.items():
        other = back.profiles[key]
        assert np.array_equal(other.counts, prof.counts) and other.spec == prof.spec
    [info] = list_baselines(engine)
    assert (info.model, info.version, info.n_rows, info.n_profiles) == ("fraud", "3", 2000, 6)


def test_duplicate_needs_replace_and_missing_is_named(engine: Engine) -> None:
    df = _frame(2, 100)
    ps = profile_frame(df, specs_for(["amount"], df))
    save_baseline(engine, "m", "1", ps)
    with pytest.raises(ConflictError, match="--replace"):
        save_baseline(engine, "m", "1", ps)
    save_baseline(engine, "m", "1", ps, replace=True)
    assert len(list_baselines(engine, "m")) == 1
    with pytest.raises(NotFoundError, match="model 'm' version '2'"):
        load_baseline(engine, "m", "2")


def test_cli_create_and_list(tmp_path: Path) -> None:
    data = tmp_path / "ref.parquet"
    _frame(3).to_parquet(data)
    db = f"sqlite:///{tmp_path / 'mw.db'}"
    assert run_cli("db", "upgrade", "--database-url", db).returncode == 0
    out = run_cli(
        "baseline",
        "create",
        "--model",
        "fraud",
        "--version",
        "1",
        "--slice-by",
        "region",
        str(data),
        "--database-url",
        db,
    )
    assert out.returncode == 0, out.stderr
    # the slice column is profiled too (overall only)
    assert "2000 rows, 3 columns, 2 slices" in out.stdout
    listed = run_cli("baseline", "list", "--database-url", db)
    # a table with a header now (it used to be headerless tab-separated lines)
    header, row = listed.stdout.splitlines()
    assert header.split() == [
        "id", "model", "version", "name", "rows", "profiles", "slice_by", "created_at"
    ]  # fmt: skip
    assert row.split()[1:7] == ["fraud", "1", "default", "2000", "7", "region"]
    doc = json.loads(run_cli("baseline", "list", "--json", "--database-url", db).stdout)
    assert doc[0]["n_rows"] == 2000 and doc[0]["slice_by"] == ["region"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.csv"], "missing.csv: file not found"),
        (["ref.csv", "--slice-by", "nope"], "column 'nope' not found"),
    ],
)
def test_cli_bad_input_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    _frame(4, 50).to_csv(tmp_path / "ref.csv", index=False)
    db = f"sqlite:///{tmp_path / 'mw.db'}"
    run_cli("db", "upgrade", "--database-url", db)
    out = run_cli(
        "baseline",
        "create",
        "--model",
        "m",
        "--version",
        "1",
        *args,
        "--database-url",
        db,
        cwd=tmp_path,
    )
    assert out.returncode == 2 and message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_window_against_stored_baseline_finds_drift(sqlite_engine: Engine) -> None:
    ref = _frame(5, 20_000)
    save_baseline(sqlite_engine, "fraud", "1", profile_frame(ref, specs_for(["amount"], ref)))
    baseline = load_baseline(sqlite_engine, "fraud", "1")
    window = _frame(6, 3000)
    window["amount"] *= 1.3
    from monitor.detectors import evaluate

    [result] = evaluate(baseline, profile_frame(window, baseline.specs))
    assert (result.column, result.method, result.status) == ("amount", "wasserstein", "drift")
    [same] = evaluate(baseline, profile_frame(_frame(7, 3000), baseline.specs))
    assert same.status == "ok"
