"""Training-serving skew: join counts, per-feature mismatch rates, worst keys, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from monitor.errors import InputError
from monitor.skew import compute_skew
from tests.conftest import run_cli


def _pair(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    n = 1000
    offline = pd.DataFrame(
        {
            "id": np.arange(n),
            "amount": rng.normal(100, 10, n),
            "country": rng.choice(["de", "fr", "it"], n),
            "clean": rng.normal(size=n),
        }
    )
    serving = offline.copy()
    serving.loc[:49, "amount"] += 5.0  # 5% off by 5
    serving.loc[7, "amount"] += 100.0  # the worst key
    serving.loc[:99, "country"] = "xx"  # 10% wrong
    serving.loc[200, "clean"] = np.nan  # one null on one side
    serving["clean"] += 1e-12  # float noise within tolerance
    serving = serving.iloc[:-20]  # 20 keys missing in serving
    extra = pd.DataFrame({"id": [5000, 5001], "amount": [1.0, 2.0], "country": ["de", "de"],
                          "clean": [0.0, 0.0]})  # fmt: skip
    return pd.concat([serving, extra], ignore_index=True), offline


def test_mismatch_rates_counts_and_worst_keys(rng: np.random.Generator) -> None:
    serving, offline = _pair(rng)
    report = compute_skew(serving, offline, "id")
    assert (report.n_joined, report.only_serving, report.only_offline) == (980, 2, 20)
    by = {f.column: f for f in report.features}
    assert [f.column for f in report.features] == ["country", "amount", "clean"]
    assert by["country"].mismatches == 100 and by["country"].kind == "categorical"
    assert by["amount"].mismatches == 50 and by["amount"].mismatch_rate == pytest.approx(50 / 980)
    assert by["amount"].worst[0] == {
        "key": 7, "serving": pytest.approx(offline.amount[7] + 105), "offline": offline.amount[7]
    }  # fmt: skip
    assert by["amount"].mean_abs_diff == pytest.approx((49 * 5 + 105) / 980, rel=1e-6)
    assert by["clean"].mismatches == 1 and by["clean"].worst[0]["serving"] is None


def test_duplicate_or_missing_key_is_an_error(rng: np.random.Generator) -> None:
    serving, offline = _pair(rng)
    with pytest.raises(InputError, match="serving: key 'id' is not unique"):
        compute_skew(pd.concat([serving, serving.iloc[:1]]), offline, "id")
    with pytest.raises(InputError, match="key column 'uid' not found"):
        compute_skew(serving, offline, "uid")


def test_cli_writes_json(rng: np.random.Generator, tmp_path: Path) -> None:
    serving, offline = _pair(rng)
    serving.to_parquet(tmp_path / "s.parquet")
    offline.to_csv(tmp_path / "o.csv", index=False)
    out = run_cli("skew", str(tmp_path / "s.parquet"), str(tmp_path / "o.csv"), "--key", "id",
                  "--json", str(tmp_path / "skew.json"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads((tmp_path / "skew.json").read_text())
    assert doc["only_offline"] == 20 and doc["features"][0]["column"] == "country"
    bad = run_cli("skew", str(tmp_path / "s.parquet"), str(tmp_path / "o.csv"), "--key", "nope")
    assert bad.returncode == 2 and "column 'nope' not found" in bad.stderr


def test_roles_come_from_the_models_config(rng: np.random.Generator, tmp_path: Path) -> None:
    serving, offline = _pair(rng)
    serving.to_parquet(tmp_path / "s.parquet")
    offline.to_parquet(tmp_path / "o.parquet")
    cfg = tmp_path / "mw.yaml"
    cfg.write_text("models:\n  - name: fraud\n    columns:\n      exclude: [country]\n")
    files = (str(tmp_path / "s.parquet"), str(tmp_path / "o.parquet"), "--key", "id")
    out = run_cli("skew", *files, "--model", "fraud", "--config", str(cfg))
    assert out.returncode == 0, out.stderr
    assert "amount:" in out.stdout and "country:" not in out.stdout
    # a flag adds to the configured roles
    both = run_cli("skew", *files, "--model", "fraud", "--config", str(cfg), "--exclude", "amount")
    assert "amount:" not in both.stdout and "clean:" in both.stdout
    unknown = run_cli("skew", *files, "--model", "nope", "--config", str(cfg))
    assert unknown.returncode == 2 and "no model 'nope'" in unknown.stderr
    alone = run_cli("skew", *files, "--model", "fraud")
    assert alone.returncode == 2 and "--model needs --config" in alone.stderr
