"""Attribution drift: reference `attr.<feature>` columns in a baseline against the attributions
of live events, as drift results with their own method names (SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pandas as pd
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from monitor.attributions import MEAN_ABS, RANK, attribution_drift, reference_attributions
from monitor.baselines import load_stored_baseline
from monitor.config import CollectConfig, ModelConfig
from monitor.evaluation import WindowEvaluator
from monitor.profiles.serving import ServingSummary
from monitor.storage import DriftResultRow
from tests.collectors.conftest import T0
from tests.conftest import run_cli

MODEL = ModelConfig(name="fraud")
N = 400


def reference(path: Path) -> Path:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({
        "amount": rng.lognormal(3, 1, N),
        "age": rng.uniform(18, 80, N),
        "prediction": rng.uniform(0, 1, N),
        "attr.amount": rng.normal(0, 0.6, N),  # the strongest driver
        "attr.age": rng.normal(0, 0.2, N),
        "attr.tenure": rng.normal(0, 0.1, N),
    })  # fmt: skip
    frame.to_csv(path, index=False)
    return path


def events(version: str, scale: dict[str, float], first: int = 0) -> list[RawRecord]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(N):
        attr = {f: float(rng.normal(0, s)) for f, s in scale.items()}
        e = {"request_id": f"{version}-{i}", "model": "fraud", "model_version": version,
             "timestamp": T0 + i, "features": {"amount": float(rng.lognormal(3, 1)),
             "age": float(rng.uniform(18, 80))}, "prediction": float(rng.uniform(0, 1)),
             "attributions": attr}  # fmt: skip
        out.append(RawRecord("p0", first + i, first + i + 1, orjson.dumps(e)))
    return out


def results(engine: Engine, version: str) -> dict[tuple[str, str], str]:
    with Session(engine) as s:
        rows = s.execute(select(DriftResultRow).where(DriftResultRow.version == version)).scalars()
        return {(r.method, r.column): r.status for r in rows if r.method.startswith("attr")}


def test_attribution_drift_per_feature_and_ranking(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    ref = reference(tmp_path / "ref.csv")
    made = run_cli("baseline", "create", "--model", "fraud", "--version", "1",
                   "--database-url", database_url, str(ref))  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "attributions: age, amount, tenure" in made.stdout
    stored = load_stored_baseline(engine, "fraud", "1")
    assert "attr.amount" not in stored.profiles.specs  # not a feature: no `missing` alerts
    assert set(stored.attributions) == {"amount", "age", "tenure"}

    ing = Ingestor(engine, "s", "http", [MODEL], CollectConfig())
    assert ing.ingest(events("1", {"amount": 0.6, "age": 0.2, "tenure": 0.1})).events == N
    # version 2: age now drives the model, amount barely does
    assert ing.ingest(events("2", {"amount": 0.1, "age": 0.6, "tenure": 0.1}, N)).events == N
    WindowEvaluator(engine, [MODEL], 3600).run()
    same, moved = results(engine, "1"), results(engine, "2")
    assert same == {(MEAN_ABS, "amount"): "ok", (MEAN_ABS, "age"): "ok",
                    (MEAN_ABS, "tenure"): "ok", (RANK, "attributions"): "ok"}  # fmt: skip
    assert moved[(MEAN_ABS, "amount")] == "drift" and moved[(MEAN_ABS, "age")] == "drift"
    assert moved[(MEAN_ABS, "tenure")] == "ok" and moved[(RANK, "attributions")] == "drift"


def test_edges_few_events_missing_features_and_a_separate_file(tmp_path: Path) -> None:
    ref = {"a": (100, 50.0), "b": (100, 10.0)}
    few = ServingSummary(attributions={"a": (5, 2.5), "b": (5, 0.5)})
    assert {r.status for r in attribution_drift(ref, few, min_n=30)} == {"insufficient_data"}
    gone = ServingSummary(attributions={"a": (100, 50.0)})  # b never attributed any more
    by = {(r.method, r.column): r for r in attribution_drift(ref, gone, min_n=30)}
    assert by[(MEAN_ABS, "b")].status == "insufficient_data"
    assert by[(RANK, "attributions")].status == "insufficient_data"  # one common feature
    assert attribution_drift({}, gone, 30) == []
    frame = pd.DataFrame({"attr.x": [1.0, -3.0, None], "y": [1, 2, 3]})
    assert reference_attributions([frame]) == {"x": (2, 4.0)}


def test_attributions_file_without_attr_columns_exits_2(tmp_path: Path) -> None:
    ref = reference(tmp_path / "ref.csv")
    plain = tmp_path / "plain.csv"
    pd.DataFrame({"x": [1.0, 2.0]}).to_csv(plain, index=False)
    db = f"sqlite:///{tmp_path / 'mw.db'}"
    out = run_cli("baseline", "create", "--model", "m", "--version", "1", "--database-url", db,
                  "--attributions", str(plain), str(ref))  # fmt: skip
    assert out.returncode == 2 and "no `attr.<feature>` columns" in out.stderr
