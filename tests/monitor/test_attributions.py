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
from monitor.attributions import (
    MEAN_ABS,
    RANK,
    attribution_drift,
    reference_attributions,
    sliced_attribution_drift,
)
from monitor.baselines.store import load_stored_baseline
from monitor.config import CollectConfig, ModelConfig
from monitor.evaluation.windows import WindowEvaluator
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


SLICED = ModelConfig(name="fraud", slices=["region"])
# Per region: which feature drives the model (the scale of its attributions).
EU = {"amount": 0.6, "age": 0.2, "tenure": 0.1}
US = {"amount": 0.2, "age": 0.4, "tenure": 0.1}


def sliced_reference(path: Path) -> Path:
    rng = np.random.default_rng(5)
    regions = np.array(["eu", "us"] * (N // 2))
    frame = pd.DataFrame({"region": regions, "amount": rng.lognormal(3, 1, N),
                          "prediction": rng.uniform(0, 1, N)})  # fmt: skip
    for feature in EU:
        scale = np.where(regions == "eu", EU[feature], US[feature])
        frame[f"attr.{feature}"] = rng.normal(0, 1, N) * scale
    frame.to_csv(path, index=False)
    return path


def sliced_events(version: str, by_region: dict[str, dict[str, float]], n: dict[str, int],
                  first: int) -> list[RawRecord]:  # fmt: skip
    rng = np.random.default_rng(11)
    out = []
    for region, count in n.items():
        for _ in range(count):
            i = first + len(out)
            attr = {f: float(rng.normal(0, s)) for f, s in by_region[region].items()}
            e = {"request_id": f"{version}-{i}", "model": "fraud", "model_version": version,
                 "timestamp": T0 + len(out), "features": {"amount": float(rng.lognormal(3, 1))},
                 "prediction": float(rng.uniform(0, 1)), "metadata": {"region": region},
                 "attributions": attr}  # fmt: skip
            out.append(RawRecord("p0", i, i + 1, orjson.dumps(e)))
    return out


def sliced_results(engine: Engine, version: str) -> dict[tuple[str, str, str], str]:
    with Session(engine) as s:
        rows = s.execute(select(DriftResultRow).where(DriftResultRow.version == version)).scalars()
        return {(r.slice_key, r.method, r.column): r.status
                for r in rows if r.method.startswith("attr")}  # fmt: skip


def test_attribution_drift_per_slice_against_the_baselines_slice_sums(
    engine: Engine, database_url: str, tmp_path: Path
) -> None:
    ref = sliced_reference(tmp_path / "ref.csv")
    made = run_cli("baseline", "create", "--model", "fraud", "--version", "1", "--slice-by",
                   "region", "--database-url", database_url, str(ref))  # fmt: skip
    assert made.returncode == 0, made.stderr
    eu, us, apac = '{"region":"eu"}', '{"region":"us"}', '{"region":"apac"}'
    stored = load_stored_baseline(engine, "fraud", "1")
    assert set(stored.attributions_by_slice) == {eu, us}
    assert stored.attributions_by_slice[eu]["amount"][0] == N // 2
    ing = Ingestor(engine, "s", "http", [SLICED], CollectConfig())
    # Version 1 as in the reference; version 2: in us, amount now drives instead of age.
    same = {"eu": 200, "us": 200, "apac": 10}
    assert ing.ingest(sliced_events("1", {"eu": EU, "us": US, "apac": EU}, same, 0)).events == 410
    moved = {"eu": EU, "us": EU, "apac": EU}
    assert ing.ingest(sliced_events("2", moved, same, 1000)).events == 410
    WindowEvaluator(engine, [SLICED], 3600).run()
    v1, v2 = sliced_results(engine, "1"), sliced_results(engine, "2")
    # Against each region's own reference, version 1 moved nowhere (against the overall
    # reference, amount in eu would be a drift: 0.6 vs 0.4).
    assert {v for k, v in v1.items() if k[0] in ("", eu, us)} == {"ok"}, v1
    assert v2[(us, MEAN_ABS, "amount")] == "drift" and v2[(us, RANK, "attributions")] == "drift"
    assert {v for k, v in v2.items() if k[0] == eu} == {"ok"}
    # apac: 10 events, under min_n (30): insufficient, whatever the reference.
    assert {v for k, v in v2.items() if k[0] == apac} == {"insufficient_data"}
    assert len([k for k in v2 if k[0] == apac]) == 4  # 3 features and the ranking


def test_a_slice_without_reference_sums_uses_the_overall_reference() -> None:
    ref = {"a": (100, 50.0), "b": (100, 10.0)}
    current = {
        "": ServingSummary(attributions={"a": (100, 50.0), "b": (100, 10.0)}),
        '{"region":"eu"}': ServingSummary(attributions={"a": (50, 10.0), "b": (50, 25.0)}),
        '{"region":"us"}': ServingSummary(attributions={"a": (50, 10.0), "b": (50, 25.0)}),
    }
    by_slice = {'{"region":"us"}': {"a": (50, 10.0), "b": (50, 25.0)}}
    got = {(r.slice and r.slice["region"], r.method, r.column): (r.status, r.n_reference)
           for r in sliced_attribution_drift(ref, by_slice, current, 30)}  # fmt: skip
    assert got[(None, MEAN_ABS, "a")] == ("ok", 100)
    assert got[("eu", MEAN_ABS, "a")] == ("drift", 100)  # 0.2 against the overall 0.5
    assert got[("eu", RANK, "attributions")][0] == "drift"
    assert got[("us", MEAN_ABS, "a")] == ("ok", 50)  # its own slice's sums
    assert got[("us", RANK, "attributions")][0] == "ok"
    assert sliced_attribution_drift({}, {}, current, 30) == []
