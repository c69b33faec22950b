"""`modelwatch estimate`: the JSON contract, exit codes, slices and chunks, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import run_cli

KEYS = ["metric", "slice", "chunk", "estimated", "ci_low", "ci_high", "realized",
        "threshold_low", "threshold_high", "n", "status"]  # fmt: skip


def _write(tmp_path: Path, name: str, n: int, a: float, labels: bool = True) -> Path:
    """Calibrated scores from Beta(a, a): a large a puts scores near 0.5 (a worse model)."""
    rng = np.random.default_rng(len(name) + n)
    p = rng.beta(a, a, n)
    frame = pd.DataFrame({"score": p, "region": rng.choice(["eu", "us"], n)})
    if labels:
        frame["label"] = (rng.random(n) < p).astype(int)
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path)
    return path


@pytest.fixture
def ref(tmp_path: Path) -> Path:
    return _write(tmp_path, "ref", 20_000, 0.5)


def test_json_contract_slices_chunks_and_realized(ref: Path, tmp_path: Path) -> None:
    cur = _write(tmp_path, "cur", 4000, 0.5)
    out = run_cli("estimate", str(ref), str(cur), "--score", "score", "--label", "label",
                  "--slice-by", "region", "--chunk-size", "2000", "--json", "-")  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    rows = doc["results"]
    assert all(list(r) == KEYS for r in rows)
    assert len(rows) == 3 * 2 * 6  # (overall, eu, us) x 2 chunks x 6 metrics
    overall = [r for r in rows if r["slice"] is None and r["metric"] == "accuracy"]
    assert [r["chunk"] for r in overall] == [
        {"index": 0, "start": 0, "end": 2000, "period_start": None},
        {"index": 1, "start": 2000, "end": 4000, "period_start": None},
    ]
    assert {json.dumps(r["slice"]) for r in rows} == {"null", '{"region": "eu"}',
                                                      '{"region": "us"}'}  # fmt: skip
    for r in overall:
        assert r["status"] == "ok" and r["realized"] is not None
        assert r["ci_low"] <= r["estimated"] <= r["ci_high"]
        assert abs(r["estimated"] - r["realized"]) < 0.03
    assert doc["calibration"]["bins"] >= 2 and doc["multivariate"] is None


def test_degraded_model_exits_1_with_fail_on_degraded(ref: Path, tmp_path: Path) -> None:
    cur = _write(tmp_path, "worse", 3000, 6.0, labels=False)
    args = ("estimate", str(ref), str(cur), "--score", "score", "--label", "label")
    out = run_cli(*args, "--json", str(tmp_path / "o.json"), "--html", str(tmp_path / "o.html"))
    assert out.returncode == 0, out.stderr
    assert "DEGRADED accuracy" in out.stdout
    doc = json.loads((tmp_path / "o.json").read_text())
    acc = next(r for r in doc["results"] if r["metric"] == "accuracy")
    assert acc["status"] == "degraded" and acc["realized"] is None
    assert acc["estimated"] < acc["threshold_low"]
    assert "degraded" in (tmp_path / "o.html").read_text()
    assert run_cli(*args, "--fail-on-degraded").returncode == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"score": "high"}, "column 'score': not a number: 'high'"),
        ({"score": 1.5}, "column 'score': scores must be probabilities in [0, 1]"),
        ({"label": 3}, "column 'label': expected 0/1, got 3"),
    ],
)
def test_bad_reference_values_name_file_and_column(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    frame = pd.read_parquet(_write(tmp_path, "base", 500, 1.0))
    frame[next(iter(change))] = frame[next(iter(change))].astype(object)
    frame.loc[7, next(iter(change))] = next(iter(change.values()))
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    out = run_cli("estimate", str(bad), str(bad), "--score", "score", "--label", "label")
    assert out.returncode == 2
    assert out.stderr.strip() == f"modelwatch: error: {bad}: {message}"


def test_missing_columns_and_empty_current_exit_2(ref: Path, tmp_path: Path) -> None:
    out = run_cli("estimate", str(ref), str(ref), "--score", "p", "--label", "label")
    assert (
        out.returncode == 2
        and out.stderr.strip() == f"modelwatch: error: {ref}: column 'p' not found"
    )
    empty = tmp_path / "empty.csv"
    empty.write_text("score,label,region\n")
    out = run_cli("estimate", str(ref), str(empty), "--score", "score", "--label", "label")
    assert out.returncode == 2 and "the current data is empty" in out.stderr


def _multiclass_file(tmp_path: Path, name: str, n: int, concentration: float) -> Path:
    """Three classes; the true class is drawn from the (calibrated) scores."""
    rng = np.random.default_rng(n)
    p = rng.dirichlet([concentration] * 3, n)
    classes = np.array(["a", "b", "c"])
    y = classes[[rng.choice(3, p=row) for row in p]]
    frame = pd.DataFrame({"pa": p[:, 0], "pb": p[:, 1], "pc": p[:, 2], "y": y})
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path


def test_multiclass_scores_per_class(tmp_path: Path) -> None:
    ref = _multiclass_file(tmp_path, "mref", 9000, 0.3)
    cur = _multiclass_file(tmp_path, "mcur", 3000, 0.3)
    args = ("estimate", str(ref), str(cur), "--label", "y", "--json", "-")
    out = run_cli(*args, "--score", "a=pa", "--score", "b=pb", "--score", "c=pc")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    by_metric = {r["metric"]: r for r in doc["results"]}
    assert set(by_metric) == {"roc_auc", "accuracy", "precision", "recall", "f1", "specificity"}
    for r in by_metric.values():
        assert r["status"] == "ok" and abs(r["estimated"] - r["realized"]) < 0.03
    assert set(doc["calibration"]["classes"]) == {"a", "b", "c"}
    # a label without a score column is named, with the classes there are
    bad = run_cli(*args, "--score", "a=pa", "--score", "b=pb")
    assert bad.returncode == 2
    assert "column 'y': class 'c' has no --score CLASS=COL (classes: a, b)" in bad.stderr


def test_multiclass_prediction_column_a_missing_value_takes_the_highest_score(
    tmp_path: Path,
) -> None:
    def top(frame: pd.DataFrame) -> np.ndarray:
        return np.array(["a", "b", "c"])[frame[["pa", "pb", "pc"]].to_numpy().argmax(axis=1)]

    ref = _multiclass_file(tmp_path, "mref", 6000, 0.3)  # REFERENCE needs the column too
    reference = pd.read_csv(ref)
    reference.assign(pred=top(reference)).to_csv(ref, index=False)
    cur = pd.read_csv(_multiclass_file(tmp_path, "mcur", 2000, 0.3))
    highest = top(cur)
    scores = ("--score", "a=pa", "--score", "b=pb", "--score", "c=pc", "--json", "-")

    def run(pred: list[str | None] | None) -> dict[str, dict[str, float]]:
        path = tmp_path / "with_pred.csv"
        cur.assign(pred=pred).to_csv(path, index=False)
        given = () if pred is None else ("--prediction", "pred")
        out = run_cli("estimate", str(ref), str(path), "--label", "y", *given, *scores)
        assert out.returncode == 0, out.stderr
        return {r["metric"]: r for r in json.loads(out.stdout)["results"]}

    by_top = run(None)
    own = run([None, *highest[1:]])  # the missing value: the highest score, as without the column
    for metric, r in by_top.items():
        assert own[metric]["estimated"] == pytest.approx(r["estimated"], abs=1e-12)
        assert own[metric]["realized"] == pytest.approx(r["realized"], abs=1e-12)
    rotated = run([{"a": "b", "b": "c", "c": "a"}[t] for t in highest])  # the column is used
    assert rotated["accuracy"]["estimated"] < by_top["accuracy"]["estimated"] - 0.3
    assert rotated["accuracy"]["realized"] < by_top["accuracy"]["realized"] - 0.3
    cur.assign(pred=["d", *highest[1:]]).to_csv(tmp_path / "bad.csv", index=False)
    bad = run_cli("estimate", str(ref), str(tmp_path / "bad.csv"), "--label", "y",
                  "--prediction", "pred", *scores)  # fmt: skip
    assert bad.returncode == 2
    assert "bad.csv: column 'pred': class 'd' has no --score CLASS=COL" in bad.stderr


def test_multivariate_key_and_exit_1_on_a_broken_correlation(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)

    def frame(n: int, correlated: bool) -> pd.DataFrame:
        a = rng.normal(0, 1, n)
        b = a + rng.normal(0, 0.2, n) if correlated else rng.normal(0, 1.02, n)
        p = rng.beta(0.5, 0.5, n)
        return pd.DataFrame({"a": a, "b": b, "score": p, "label": (rng.random(n) < p) * 1})

    ref, cur = tmp_path / "r.parquet", tmp_path / "c.parquet"
    frame(20_000, True).to_parquet(ref)
    frame(4000, False).to_parquet(cur)
    args = ("estimate", str(ref), str(cur), "--score", "score", "--label", "label")
    out = run_cli(*args, "--json", "-", "--chunk-size", "2000", "--html", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    assert "Multivariate drift (PCA reconstruction error)" in (tmp_path / "r.html").read_text()
    mv = json.loads(out.stdout)["multivariate"]
    assert mv["features"] == ["a", "b"] and mv["status"] == "drift"
    assert mv["value"] > mv["threshold"] and [c["status"] for c in mv["chunks"]] == ["drift"] * 2
    assert "multivariate=drift" in out.stderr
    assert run_cli(*args, "--fail-on-degraded").returncode == 1
    missing = run_cli(*args, "--features", "a,zz")
    assert missing.returncode == 2 and f"{ref}: column 'zz' not found" in missing.stderr


def test_baseline_stores_the_calibration_and_estimate_uses_it(ref: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    made = run_cli("baseline", "create", "--model", "m", "--version", "1", "--score", "score",
                   "--label", "label", "--database-url", db, str(ref))  # fmt: skip
    assert made.returncode == 0, made.stderr
    cur = _write(tmp_path, "worse", 3000, 6.0, labels=False)
    by_file = run_cli("estimate", str(ref), str(cur), "--score", "score", "--label", "label",
                      "--features", "", "--json", "-")  # fmt: skip
    stored = run_cli("estimate", str(cur), "--baseline", "default", "--model", "m",
                     "--database-url", db, "--json", "-")  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    a, b = json.loads(by_file.stdout)["results"], json.loads(stored.stdout)["results"]
    assert [r["metric"] for r in a] == [r["metric"] for r in b]
    for x, y in zip(a, b, strict=True):
        assert x["estimated"] == pytest.approx(y["estimated"], abs=1e-12)
        assert x["threshold_low"] == pytest.approx(y["threshold_low"], abs=1e-12)
        assert y["status"] == "degraded" or y["metric"] != "accuracy"
    # a baseline without a calibration says how to make one
    run_cli("baseline", "create", "--model", "m", "--version", "1", "--name", "plain",
            "--database-url", db, str(ref))  # fmt: skip
    plain = run_cli("estimate", str(cur), "--baseline", "plain", "--model", "m",
                    "--database-url", db)  # fmt: skip
    assert plain.returncode == 2 and "has no calibration" in plain.stderr
    half = run_cli("baseline", "create", "--model", "m", "--version", "1", "--name", "x",
                   "--score", "score", "--database-url", db, str(ref))  # fmt: skip
    assert half.returncode == 2 and "--score and --label go together" in half.stderr


def test_period_chunks_by_time_window_in_time_order(ref: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    frame = pd.read_parquet(ref)
    frame["ts"] = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(
        rng.uniform(0, 3 * 86400, len(frame)), unit="s"
    )  # unsorted on purpose
    timed = tmp_path / "timed.parquet"
    frame.to_parquet(timed)
    args = ("estimate", str(timed), str(timed), "--score", "score", "--label", "label")
    out = run_cli(*args, "--period", "1d", "--timestamp", "ts", "--json", "-")
    assert out.returncode == 0, out.stderr
    rows = [r for r in json.loads(out.stdout)["results"] if r["metric"] == "accuracy"]
    assert [r["chunk"]["period_start"] for r in rows] == [
        "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00", "2026-01-03T00:00:00+00:00"
    ]  # fmt: skip
    assert sum(r["n"] for r in rows) == len(frame)
    assert all(r["status"] == "ok" and r["threshold_low"] is not None for r in rows)
    frame["ts"] = frame["ts"].astype(str)
    frame.loc[3, "ts"] = "yesterday"
    frame.to_csv(tmp_path / "bad.csv", index=False)
    bad = run_cli("estimate", str(timed), str(tmp_path / "bad.csv"), "--score", "score",
                  "--label", "label", "--period", "1d", "--timestamp", "ts")  # fmt: skip
    assert bad.returncode == 2
    assert f"{tmp_path / 'bad.csv'}: column 'ts': not a timestamp: 'yesterday'" in bad.stderr
    assert run_cli(*args, "--period", "1d").returncode == 2  # --timestamp missing


def test_baseline_thresholds_per_slice_fall_back_to_overall(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    n = 8000
    p = rng.beta(0.5, 0.5, n)
    region = np.where(np.arange(n) < 200, "ap", rng.choice(["eu", "us"], n))  # ap: 200 rows
    frame = pd.DataFrame({"score": p, "label": (rng.random(n) < p).astype(int), "region": region})
    ref = tmp_path / "sliced.parquet"
    frame.to_parquet(ref)
    db = f"sqlite:///{tmp_path / 's.db'}"
    made = run_cli("baseline", "create", "--model", "m", "--version", "1", "--score", "score",
                   "--label", "label", "--slice-by", "region", "--database-url", db,
                   str(ref))  # fmt: skip
    assert made.returncode == 0, made.stderr
    cur = _write(tmp_path, "cur", 3000, 0.5, labels=False)
    cur_frame = pd.read_parquet(cur)
    cur_frame["region"] = np.where(np.arange(3000) < 100, "ap", cur_frame["region"])
    cur_frame.to_parquet(cur)
    args = ("--slice-by", "region", "--json", "-")
    stored = run_cli("estimate", str(cur), "--baseline", "default", "--model", "m",
                     "--database-url", db, *args)  # fmt: skip
    by_file = run_cli("estimate", str(ref), str(cur), "--score", "score", "--label", "label",
                      "--features", "", *args)  # fmt: skip
    assert stored.returncode == 0 and by_file.returncode == 0, stored.stderr + by_file.stderr

    def low(out: str) -> dict[tuple[str | None, str], float | None]:
        return {((r["slice"] or {}).get("region"), r["metric"]): r["threshold_low"]
                for r in json.loads(out)["results"]}  # fmt: skip

    ours, theirs = low(stored.stdout), low(by_file.stdout)
    for metric in ("accuracy", "roc_auc", "specificity"):
        # eu and us: 10 reference chunks of their own rows, as the file-based run draws them
        for region in (None, "eu", "us"):
            assert ours[(region, metric)] == pytest.approx(theirs[(region, metric)], abs=1e-12)
        assert ours[("eu", metric)] != ours[(None, metric)]
        # ap: 200 reference rows (under 10 chunks of 30): the overall threshold, both ways
        assert ours[("ap", metric)] == ours[(None, metric)]
        assert theirs[("ap", metric)] == theirs[(None, metric)]


def test_multiclass_baseline_stores_calibrations_that_estimate_uses(tmp_path: Path) -> None:
    ref = _multiclass_file(tmp_path, "mref", 3000, 0.3)
    db = f"sqlite:///{tmp_path / 'mc.db'}"
    scores = ("--score", "a=pa", "--score", "b=pb", "--score", "c=pc")
    base = ("baseline", "create", "--model", "m", "--version", "1", "--label", "y",
            "--database-url", db)  # fmt: skip
    missing = run_cli(*base, "--score", "a=pa", "--score", "b=pb", str(ref))
    assert missing.returncode == 2
    assert "column 'y': class 'c' has no --score CLASS=COL (classes: a, b)" in missing.stderr
    made = run_cli(*base, *scores, str(ref))
    assert made.returncode == 0, made.stderr
    # `estimate --baseline` with the stored per-class calibrations: the file-based estimates
    cur = _multiclass_file(tmp_path, "mcur", 1500, 0.3)
    stored = run_cli("estimate", str(cur), "--baseline", "default", "--model", "m",
                     "--database-url", db, "--json", "-", "--html",
                     str(tmp_path / "mc.html"))  # fmt: skip
    by_file = run_cli("estimate", str(ref), str(cur), *scores, "--label", "y", "--json", "-")
    assert stored.returncode == 0 and by_file.returncode == 0, stored.stderr + by_file.stderr
    a, b = json.loads(stored.stdout), json.loads(by_file.stdout)
    assert set(a["calibration"]["classes"]) == {"a", "b", "c"}
    assert f"{len(a['results'])} results" in (tmp_path / "mc.html").read_text()
    assert [r["metric"] for r in a["results"]] == [r["metric"] for r in b["results"]]
    for x, y in zip(a["results"], b["results"], strict=True):
        for key in ("estimated", "ci_low", "ci_high", "threshold_low", "realized"):
            assert x[key] == pytest.approx(y[key], abs=1e-12), key
