"""Multiclass estimation in the daemon: `baseline create --score CLASS=COL ...` stores per-class
calibrations, collectors derive `__cbpe_score.<k>` and `__cbpe_predicted` from list predictions,
and the evaluate job's estimates equal the one-shot `modelwatch estimate REFERENCE CURRENT` on
the same rows (SQLite and PostgreSQL, real ingest and evaluate job)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlalchemy.engine import Engine

from collectors import RawRecord
from monitor.app.daemon.signals import estimate_signals
from monitor.config import parse_config
from monitor.estimation._realized import class_histograms
from monitor.outcomes import MulticlassSummary
from monitor.outcomes.from_summary import roc_auc_error
from tests.collectors.conftest import T0
from tests.conftest import run_cli
from tests.monitor.app.daemon.test_estimation_daemon import (
    ingest_and_evaluate,
    records,
    same_as_cli,
    slice_text,
    stored_rows,
)

HOUR = 3600.0
N_REF, N_CUR = 4000, 1200
SCORES = ["--score", "0=p0", "--score", "1=p1", "--score", "2=p2"]


def _frame(n: int, seed: int, shifted: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1, (n, 3)) * 2.0
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    label = np.array([rng.choice(3, p=row) for row in p])
    shown = np.exp(logits * 0.15) / np.exp(logits * 0.15).sum(axis=1, keepdims=True)
    scores = shown if shifted else p
    return pd.DataFrame({"a": rng.normal(0, 1, n), "region": rng.choice(["eu", "us"], n),
                         "p0": scores[:, 0], "p1": scores[:, 1], "p2": scores[:, 2],
                         "label": label})  # fmt: skip


def _config(url: str) -> Any:
    outcomes = {"task": "multiclass", "output": "output"}
    model = {"name": "m", "slices": ["region"], "outcomes": outcomes}
    return parse_config({"database_url": url, "models": [model]}, env={})


def _events(frame: pd.DataFrame, labels: bool) -> list[RawRecord]:
    items: list[dict[str, Any]] = [
        {"request_id": f"r{i}", "model": "m", "model_version": "1", "timestamp": T0 + i * 0.5,
         "features": {"a": float(row.a)}, "prediction": {"output": [row.p0, row.p1, row.p2]},
         "metadata": {"region": row.region}}
        for i, row in enumerate(frame.itertuples(index=False))
    ]  # fmt: skip
    return records(items, frame["label"] if labels else [], T0)


@pytest.fixture
def baseline(engine: Engine, tmp_path: Path) -> str:
    url = engine.url.render_as_string(hide_password=False)
    ref = tmp_path / "ref.parquet"
    _frame(N_REF, 1).to_parquet(ref)
    made = run_cli("baseline", "create", "--model", "m", "--version", "1", *SCORES, "--label",
                   "label", "--slice-by", "region", "--database-url", url, str(ref))  # fmt: skip
    assert made.returncode == 0, made.stderr
    return url


def _run(url: str, frame: pd.DataFrame, labels: bool) -> Engine:
    return ingest_and_evaluate(url, _config(url), _events(frame, labels))


def _daemon_and_cli(
    url: str, frame: pd.DataFrame, tmp_path: Path
) -> tuple[Engine, dict[tuple[str, str], Any], list[dict[str, Any]]]:
    """Labelled `frame` through ingest and the evaluate job, and through `modelwatch estimate`
    (per region): the engine, the stored rows and the CLI's results."""
    ref, cur = tmp_path / "ref.parquet", tmp_path / "cur.parquet"
    frame.to_parquet(cur)
    engine = _run(url, frame, labels=True)
    cli = run_cli("estimate", str(ref), str(cur), *SCORES, "--label", "label", "--slice-by",
                  "region", "--features", "a", "--json", "-")  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    return engine, stored_rows(engine), json.loads(cli.stdout)["results"]


def _auc_error(frame: pd.DataFrame, want: dict[str, Any]) -> float:
    """The binning error bound of the summaries' macro ROC-AUC of `want`'s slice of `frame`."""
    rows = frame if want["slice"] is None else frame[frame["region"] == want["slice"]["region"]]
    summary = MulticlassSummary()
    summary.add(rows["label"].tolist(), rows[["p0", "p1", "p2"]].to_numpy().tolist())
    histograms = class_histograms(["0", "1", "2"], summary)
    assert histograms is not None
    return float(np.mean([roc_auc_error(h) for h in histograms]))


def test_daemon_multiclass_estimates_equal_the_one_shot_cli(baseline: str, tmp_path: Path) -> None:
    frame = _frame(N_CUR, 2)
    engine, stored, results = _daemon_and_cli(baseline, frame, tmp_path)
    assert len(results) == 18  # 6 metrics: overall, eu, us
    assert {r["metric"] for r in results} == {"roc_auc", "accuracy", "precision", "recall",
                                              "f1", "specificity"}  # fmt: skip
    for want in results:
        got = same_as_cli(stored, want)
        assert got.threshold_low is not None  # the slices' own, from their reference rows
        if want["metric"] == "roc_auc":  # from the summaries' class score histograms
            bound = _auc_error(frame, want)
            assert 0 < bound < 0.002
            assert abs(got.realized - want["realized"]) <= bound + 1e-12, want["slice"]
        else:  # from the joined labels' confusion matrix
            assert got.realized == pytest.approx(want["realized"], abs=1e-12)
        # inside the band on the unshifted stream
        assert got.ci_low <= got.realized <= got.ci_high, (want["metric"], want["slice"])
    assert not [s for s in estimate_signals(engine, ["m"], datetime.now(UTC)) if s.firing]
    engine.dispose()


def test_shifted_multiclass_stream_fires_estimated_outcome(baseline: str) -> None:
    engine = _run(baseline, _frame(N_CUR, 3, shifted=True), labels=False)
    signals = estimate_signals(engine, ["m"], datetime.now(UTC))
    firing = {(s.labels["metric"], s.labels["slice"]) for s in signals if s.firing}
    assert {("accuracy", ""), ("accuracy", "region=eu"), ("accuracy", "region=us")} <= firing
    stored = stored_rows(engine)
    assert all(r.realized is None for r in stored.values())
    acc = stored[("", "accuracy")]
    assert acc.status == "degraded" and acc.value is not None and acc.threshold_low is not None
    assert acc.value < acc.threshold_low
    engine.dispose()


def test_class_scores_from_features_named_like_the_baseline(baseline: str, tmp_path: Path) -> None:
    # the prediction is a class name; each class's score is the feature named as its column
    frame = _frame(600, 4)
    ref, cur = tmp_path / "ref.parquet", tmp_path / "cur.parquet"
    frame.to_parquet(cur)
    items = [
        {"request_id": f"r{i}", "model": "m", "model_version": "1", "timestamp": T0 + i,
         "features": {"a": float(row.a), "p0": row.p0, "p1": row.p1,
                      "p2": None if i == 0 else row.p2},
         "prediction": "x", "metadata": {"region": row.region}}
        for i, row in enumerate(frame.itertuples(index=False))
    ]  # fmt: skip
    engine = ingest_and_evaluate(baseline, _config(baseline), records(items, [], T0))
    stored = stored_rows(engine)
    frame.loc[0, "p2"] = np.nan  # a missing class score: the row is left out, as by the CLI
    frame.to_parquet(cur)
    cli = run_cli("estimate", str(ref), str(cur), *SCORES, "--label", "label", "--features",
                  "a", "--json", "-")  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    for want in json.loads(cli.stdout)["results"]:
        got = stored[("", want["metric"])]
        assert got.n == want["n"] == 599
        assert got.value == pytest.approx(want["estimated"], abs=1e-9)
    engine.dispose()


def test_realized_macro_averages_over_the_baseline_classes(baseline: str, tmp_path: Path) -> None:
    # class "2" is neither true nor predicted in this window: it counts 0 in the macro averages
    # of both paths (NannyML's convention), not left out of the daemon's as a class never seen
    frame = _frame(N_CUR, 5)
    top = frame[["p0", "p1", "p2"]].to_numpy().argmax(axis=1)
    frame = frame[(frame["label"] != 2) & (top != 2)].reset_index(drop=True)
    engine, stored, results = _daemon_and_cli(baseline, frame, tmp_path)
    for want in results:
        got = same_as_cli(stored, want)
        if want["metric"] != "roc_auc":
            assert got.realized == pytest.approx(want["realized"], abs=1e-12), want["metric"]
        else:  # class "2" has no positives: 0.5 in both macro averages
            assert abs(got.realized - want["realized"]) <= _auc_error(frame, want) + 1e-12
    y, pred = frame["label"].to_numpy(), frame[["p0", "p1", "p2"]].to_numpy().argmax(axis=1)
    precision = [((y == k) & (pred == k)).sum() / (pred == k).sum() for k in (0, 1)]
    assert stored[("", "precision")].realized == pytest.approx(sum(precision) / 3, abs=1e-12)
    assert stored[("", "accuracy")].realized == pytest.approx((y == pred).mean(), abs=1e-12)
    # one-vs-rest TN / (TN + FP); class "2" has no false positives: specificity 1
    specificity = [((y != k) & (pred != k)).sum() / (y != k).sum() for k in (0, 1)]
    assert stored[("", "specificity")].realized == pytest.approx((sum(specificity) + 1) / 3,
                                                                 abs=1e-12)  # fmt: skip
    engine.dispose()


def test_an_events_label_prediction_is_its_predicted_class(baseline: str, tmp_path: Path) -> None:
    # the prediction is a class (half the rows another than the highest score), the class
    # scores are features: estimates and realized equal `estimate --prediction COL`'s
    frame = _frame(N_CUR, 6)
    top = frame[["p0", "p1", "p2"]].to_numpy().argmax(axis=1)
    frame["pred"] = np.where(np.arange(N_CUR) % 2 == 0, (top + 1) % 3, top)
    items = [
        {"request_id": f"r{i}", "model": "m", "model_version": "1", "timestamp": T0 + i * 0.5,
         "features": {"a": float(row.a), "p0": row.p0, "p1": row.p1, "p2": row.p2},
         "prediction": int(row.pred), "metadata": {"region": row.region}}
        for i, row in enumerate(frame.itertuples(index=False))
    ]  # fmt: skip
    engine = ingest_and_evaluate(baseline, _config(baseline), records(items, frame["label"], T0))
    stored = stored_rows(engine)
    ref, cur = tmp_path / "ref.parquet", tmp_path / "cur.parquet"
    pd.read_parquet(ref).assign(pred=lambda f: f[["p0", "p1", "p2"]].to_numpy().argmax(axis=1)
                                ).to_parquet(ref)  # fmt: skip
    frame.to_parquet(cur)
    cli = run_cli("estimate", str(ref), str(cur), *SCORES, "--label", "label", "--prediction",
                  "pred", "--slice-by", "region", "--features", "a", "--json", "-")  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    for want in json.loads(cli.stdout)["results"]:
        got = stored[(slice_text(want), want["metric"])]
        assert got.value == pytest.approx(want["estimated"], abs=1e-9), want["metric"]
        if want["metric"] != "roc_auc":
            assert got.realized == pytest.approx(want["realized"], abs=1e-12), want["metric"]
        else:  # class scores sent as features only: the outcome summaries saw no scores
            assert got.realized is None and want["realized"] is not None
    assert stored[("", "accuracy")].value < 0.7  # half the predictions are not the top class
    engine.dispose()
