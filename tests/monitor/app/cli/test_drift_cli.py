"""`modelwatch drift`: JSON contract, exit codes, reports, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import run_cli

KEYS = [
    "column", "slice", "kind", "method", "value", "threshold", "threshold_by", "p_value",
    "n_reference", "n_current", "status", "decided_by", "evidence_alpha", "reason",
]  # fmt: skip


def _write(tmp_path: Path, seed: int, shift: float, fmt: str = "parquet") -> Path:
    rng = np.random.default_rng(seed)
    n = 5000
    frame = pd.DataFrame(
        {
            "amount": rng.normal(100 + shift, 20, n),
            "channel": rng.choice(["web", "app", "pos"], n),
            "region": rng.choice(["eu", "us"], n),
        }
    )
    path = tmp_path / f"data{seed}.{fmt}"
    frame.to_parquet(path) if fmt == "parquet" else frame.to_csv(path, index=False)
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    return _write(tmp_path, 1, 0.0), _write(tmp_path, 2, 0.0, "csv"), _write(tmp_path, 3, 8.0)


def test_json_contract_and_no_drift(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ref, same, _ = files
    out = run_cli("drift", str(ref), str(same), "--slice-by", "region", "--json",
                  str(tmp_path / "d.json"), "--fail-on-drift")  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads((tmp_path / "d.json").read_text())
    assert list(doc) == ["dataset_drift", "n_reference", "n_current", "results"]
    assert doc["dataset_drift"] is False and doc["n_reference"] == doc["n_current"] == 5000
    rows = doc["results"]
    assert all(list(r) == KEYS for r in rows)
    # one overall row per column plus one per column per slice value; the slice column is a
    # column too (overall only: within its own slices it holds one value)
    assert [(r["column"], r["slice"]) for r in rows] == [
        (c, s) for c in ("amount", "channel") for s in (None, {"region": "eu"}, {"region": "us"})
    ] + [("region", None)]
    assert {r["status"] for r in rows} == {"ok"}


def test_drift_found_fail_on_drift_and_html(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ref, _, shifted = files
    html = tmp_path / "r.html"
    out = run_cli("drift", str(ref), str(shifted), "--html", str(html), "--fail-on-drift")
    assert out.returncode == 1
    assert "DRIFT amount wasserstein" in out.stdout and "channel" not in out.stdout
    text = html.read_text()
    # amount: histogram + CDF; channel and region: one bar chart each
    assert text.count("<svg") == 4 and "http://" not in text.replace("http://www.w3.org", "")
    assert text.index('id="col-amount"') < text.index('id="col-channel"')
    assert "Dataset drift: no drift — 1 of 3 columns drifted overall" in text
    plain = run_cli("drift", str(ref), str(shifted))
    assert plain.returncode == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--columns", "amount,nope"], "column 'nope' not found"),
        (["--slice-by", "shop"], "column 'shop' not found"),
        (["--methods", "kl"], "unknown drift method 'kl'"),
    ],
)
def test_bad_input_exit_2(files: tuple[Path, Path, Path], extra: list[str], message: str) -> None:
    ref, same, _ = files
    out = run_cli("drift", str(ref), str(same), *extra)
    assert out.returncode == 2 and message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_missing_file_named(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    out = run_cli("drift", str(files[0]), str(tmp_path / "nope.parquet"))
    assert out.returncode == 2 and "nope.parquet: file not found" in out.stderr


def test_current_lacking_a_column_names_file(tmp_path: Path) -> None:
    ref = _write(tmp_path, 1, 0.0)
    pd.read_parquet(ref).drop(columns=["channel"]).to_parquet(tmp_path / "cur.parquet")
    out = run_cli("drift", str(ref), str(tmp_path / "cur.parquet"))
    assert out.returncode == 2 and "cur.parquet: column 'channel' not found" in out.stderr


@pytest.mark.evidently
def test_evidently_html_is_written(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ref, _, shifted = files
    target = tmp_path / "ev.html"
    out = run_cli("drift", str(ref), str(shifted), "--evidently-html", str(target))
    assert out.returncode == 0, out.stderr
    assert target.stat().st_size > 10_000 and "amount" in target.read_text()
