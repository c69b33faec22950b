"""Regression estimation in the daemon: `baseline create --task regression` stores the loss
models, collectors derive `__dle_absolute` and `__dle_squared` per event, and the evaluate job's
MAE, MSE and RMSE (realized from the joined labels) equal `modelwatch estimate CURRENT
--baseline` on the same rows (SQLite and PostgreSQL, real ingest and evaluate job)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pytest
from sqlalchemy.engine import Engine

from collectors import RawRecord
from monitor.app.daemon.signals import estimate_signals
from monitor.config import parse_config
from tests.collectors.conftest import T0
from tests.conftest import run_cli
from tests.monitor.app.daemon.test_estimation_daemon import (
    ingest_and_evaluate,
    same_as_cli,
    stored_rows,
)

N_REF, N_CUR = 3000, 1200


def _frame(n: int, seed: int, wild_share: float = 0.2) -> pd.DataFrame:
    """y = 3·x + noise, four times wider for `kind` wild; the model predicts 3·x."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, n)
    kind = np.where(rng.random(n) < wild_share, "wild", "calm")
    noise = rng.normal(0, 1, n) * np.where(kind == "wild", 4.0, 1.0)
    return pd.DataFrame({"x": x, "kind": kind, "region": rng.choice(["eu", "us"], n),
                         "y_pred": 3 * x, "y": 3 * x + noise})  # fmt: skip


def _config(url: str) -> Any:
    model = {"name": "m", "slices": ["region"], "outcomes": {"task": "regression"}}
    return parse_config({"database_url": url, "models": [model]}, env={})


def _records(frame: pd.DataFrame, labels: bool) -> list[RawRecord]:
    items: list[dict[str, Any]] = [
        {"request_id": f"r{i}", "model": "m", "model_version": "1", "timestamp": T0 + i * 0.5,
         "features": {"x": float(row.x), "kind": row.kind}, "prediction": float(row.y_pred),
         "metadata": {"region": row.region}}
        for i, row in enumerate(frame.itertuples(index=False))
    ]  # fmt: skip
    if labels:
        items += [{"request_id": f"r{i}", "model": "m", "label": float(y), "timestamp": T0}
                  for i, y in enumerate(frame["y"])]  # fmt: skip
    return [RawRecord("s", i, i + 1, orjson.dumps(x)) for i, x in enumerate(items)]


@pytest.fixture
def baseline(engine: Engine, tmp_path: Path) -> str:
    url = engine.url.render_as_string(hide_password=False)
    ref = tmp_path / "ref.parquet"
    _frame(N_REF, 1).to_parquet(ref)
    made = run_cli("baseline", "create", "--model", "m", "--version", "1", "--task",
                   "regression", "--prediction", "y_pred", "--label", "y", "--features",
                   "x,kind", "--slice-by", "region", "--database-url", url, str(ref))  # fmt: skip
    assert made.returncode == 0, made.stderr
    return url


@pytest.mark.parametrize(("share", "status"), [(0.2, "ok"), (0.7, "degraded")])
def test_daemon_regression_estimates_equal_the_cli(
    baseline: str, tmp_path: Path, share: float, status: str
) -> None:
    frame = _frame(N_CUR, 2, share)
    cur = tmp_path / "cur.parquet"
    frame.to_parquet(cur)
    engine = ingest_and_evaluate(baseline, _config(baseline), _records(frame, labels=True))
    cli = run_cli("estimate", str(cur), "--baseline", "default", "--model", "m", "--slice-by",
                  "region", "--database-url", baseline, "--json", "-")  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    results = json.loads(cli.stdout)["results"]
    assert len(results) == 9  # mae, mse, rmse: overall, eu, us
    stored = stored_rows(engine)
    for want in results:
        got = same_as_cli(stored, want)
        assert got.threshold_high == pytest.approx(want["threshold_high"], rel=1e-12)
        assert got.realized == pytest.approx(want["realized"], rel=1e-9)
        assert got.ci_low <= got.realized <= got.ci_high, want
    assert stored[("", "mae")].status == status
    signals = estimate_signals(engine, ["m"], datetime.now(UTC))
    overall = [s for s in signals if s.kind == "estimated_outcome" and s.labels["slice"] == ""]
    firing = {s.labels["metric"] for s in overall if s.firing}
    assert firing == (set() if status == "ok" else {"mae", "mse", "rmse"})
    engine.dispose()
