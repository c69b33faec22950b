"""`baseline create --features COLS` stores the fitted PCA reconstruction model and its
reference-chunk bounds; `estimate CURRENT --baseline NAME --model M` gives the same multivariate
verdicts from it as the file-based run on REFERENCE CURRENT."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import run_cli


def _write(tmp_path: Path, name: str, n: int, seed: int, correlated: bool = True) -> Path:
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1, n)
    b = a + rng.normal(0, 0.2, n) if correlated else rng.normal(0, 1.02, n)
    a[rng.random(n) < 0.02] = np.nan
    p = rng.beta(0.5, 0.5, n)
    frame = pd.DataFrame({"a": a, "b": b, "c": rng.choice(["x", "y", "z"], n), "score": p,
                          "label": (rng.random(n) < p).astype(int)})  # fmt: skip
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path)
    return path


def test_stored_multivariate_model_equals_the_file_based_run(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    ref = _write(tmp_path, "ref", 2000, 1)
    made = run_cli("baseline", "create", "--model", "m", "--version", "1", "--score", "score",
                   "--label", "label", "--features", "a,b,c", "--database-url", db,
                   str(ref))  # fmt: skip
    assert made.returncode == 0, made.stderr
    # 2000 reference rows: 10 chunks of 200 both ways (stored: 10 equal chunks)
    same, broken = _write(tmp_path, "same", 600, 2), _write(tmp_path, "broken", 600, 3, False)
    for cur, expected in ((same, "ok"), (broken, "drift")):
        by_file = run_cli("estimate", str(ref), str(cur), "--score", "score", "--label",
                          "label", "--features", "a,b,c", "--chunk-size", "200",
                          "--json", "-")  # fmt: skip
        stored = run_cli("estimate", str(cur), "--baseline", "default", "--model", "m",
                         "--database-url", db, "--chunk-size", "200", "--json", "-")  # fmt: skip
        assert by_file.returncode == 0 and stored.returncode == 0, stored.stderr
        x, y = json.loads(by_file.stdout)["multivariate"], json.loads(stored.stdout)["multivariate"]
        assert x["status"] == y["status"] == expected
        assert len(y["chunks"]) == 3
        assert (x["features"], x["components"]) == (y["features"], y["components"])
        for rx, ry in zip([x, *x["chunks"]], [y, *y["chunks"]], strict=True):
            assert ry["status"] == rx["status"] and ry["n"] == rx["n"]
            for key in ("value", "threshold", "threshold_low"):
                assert ry[key] == pytest.approx(rx[key], rel=1e-9)


def test_baseline_without_features_has_no_multivariate_and_bad_features_fail(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    ref = _write(tmp_path, "ref", 500, 4)
    args = ("baseline", "create", "--model", "m", "--version", "1", "--score", "score",
            "--label", "label", "--database-url", db)  # fmt: skip
    assert run_cli(*args, str(ref)).returncode == 0
    out = run_cli("estimate", str(ref), "--baseline", "default", "--model", "m",
                  "--database-url", db, "--json", "-")  # fmt: skip
    assert out.returncode == 0 and json.loads(out.stdout)["multivariate"] is None
    bad = run_cli(*args, "--name", "bad", "--features", "a,zz", str(ref))
    assert bad.returncode == 2 and "zz" in bad.stderr and "Traceback" not in bad.stderr
