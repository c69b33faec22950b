"""Which columns `drift` and `baseline create` compare, and how: slice columns, discrete
columns, `--categorical` (and the model's `categorical` key), `--threshold-floor`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from monitor.baselines.store import load_stored_baseline
from monitor.storage import make_engine
from tests.conftest import run_cli


def _frame(seed: int, us_share: float, positive: float, n: int = 4000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "amount": rng.normal(100, 20, n),
            "approved": (rng.uniform(size=n) < positive).astype(np.int64),
            "zip": rng.integers(10_000, 10_200, n),
            "region": np.where(rng.uniform(size=n) < us_share, "us", "eu"),
        }
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("columns")
    ref, cur = root / "ref.parquet", root / "cur.parquet"
    _frame(1, 0.5, 0.538).to_parquet(ref)
    _frame(2, 0.9, 0.311).to_parquet(cur)
    return ref, cur


def _rows(tmp_path: Path, *args: str) -> tuple[int, str, list[dict[str, object]]]:
    out = run_cli("drift", *args, "--json", str(tmp_path / "d.json"))
    assert out.returncode in (0, 1), out.stderr
    return out.returncode, out.stdout, json.loads((tmp_path / "d.json").read_text())["results"]


def test_slice_column_drift_is_reported_overall(files: tuple[Path, Path], tmp_path: Path) -> None:
    ref, cur = files
    for extra in ([], ["--columns", "amount"]):
        _, stdout, rows = _rows(tmp_path, str(ref), str(cur), "--slice-by", "region", *extra)
        region = [r for r in rows if r["column"] == "region"]
        # The region mix moved 50% -> 90% us: reported once, overall, as drift.
        assert [(r["slice"], r["status"]) for r in region] == [(None, "drift")]
        assert "DRIFT region jensen_shannon" in stdout
        assert all(r["slice"] is None or "region" in r["slice"] for r in rows)


def test_binary_column_drifts_by_the_discrete_default(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    ref, cur = files
    _, _, rows = _rows(tmp_path, str(ref), str(cur), "--columns", "approved,amount")
    by = {r["column"]: r for r in rows}
    assert by["approved"]["method"] == "jensen_shannon" and by["approved"]["status"] == "drift"
    assert by["approved"]["kind"] == "numeric"
    assert by["amount"]["method"] == "wasserstein" and by["amount"]["status"] == "ok"


def test_categorical_flag_profiles_numbers_as_categories(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    ref, cur = files
    _, _, plain = _rows(tmp_path, str(ref), str(cur), "--columns", "zip")
    assert [r["kind"] for r in plain] == ["numeric"]  # 200 distinct codes: quantile bins
    _, _, forced = _rows(tmp_path, str(ref), str(cur), "--columns", "zip", "--categorical", "zip")
    assert [(r["kind"], r["method"]) for r in forced] == [("categorical", "jensen_shannon")]
    bad = run_cli("drift", str(ref), str(cur), "--categorical", "nope")
    assert bad.returncode == 2 and "column 'nope'" in bad.stderr


@pytest.mark.parametrize(("floor", "by"), [("100", {"floor"}), ("0", {"reference"})])
def test_threshold_floor_flag_matches_the_yaml_key(
    files: tuple[Path, Path], tmp_path: Path, floor: str, by: set[str]
) -> None:
    ref, _ = files
    args = [str(ref), str(ref), "--columns", "amount", "--thresholds", "reference"]
    _, _, rows = _rows(tmp_path, *args, "--threshold-floor", floor)
    assert {r["threshold_by"] for r in rows} == by
    if floor == "100":
        assert rows[0]["threshold"] == pytest.approx(100 * 0.1)  # floor x the constant bound
    bad = run_cli("drift", *args, "--threshold-floor", "-1")
    assert bad.returncode == 2 and "threshold floor must be >= 0" in bad.stderr


def test_baseline_create_profiles_slice_columns_and_configured_categories(
    files: tuple[Path, Path], tmp_path: Path, database_url: str
) -> None:
    ref, _ = files
    db = database_url
    cfg = tmp_path / "mw.yaml"
    cfg.write_text(f"database_url: {db}\nmodels:\n  - {{name: m, categorical: [zip]}}\n")
    assert run_cli("db", "upgrade", "--config", str(cfg)).returncode == 0
    made = run_cli(
        "baseline", "create", "--model", "m", "--version", "1", "--config", str(cfg),
        "--columns", "amount,zip,approved", "--slice-by", "region", str(ref),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    stored = load_stored_baseline(make_engine(db), "m", "1").profiles
    assert stored.columns == ["amount", "zip", "approved", "region"]
    assert stored.specs["zip"].kind == stored.specs["region"].kind == "categorical"
    assert stored.specs["approved"].discrete and stored.specs["approved"].edges == (0.0, 1.0, 1.0)
    # Within its own slices the slice column is not profiled (it holds one value there).
    assert not [k for k in stored.profiles if k[0] and k[1] == "region"]
    bad = run_cli(
        "baseline", "create", "--model", "m", "--version", "2", "--config", str(cfg),
        "--columns", "amount", "--categorical", "zip", str(ref),
    )  # fmt: skip
    assert bad.returncode == 2 and "--categorical zip" in bad.stderr
