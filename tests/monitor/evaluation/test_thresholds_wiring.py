"""Reference thresholds end to end: stored with baselines, chosen by config and CLI, honoured
by the daemon's window evaluation, recorded with every result."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from monitor.baselines.store import load_stored_baseline, save_baseline
from monitor.config import parse_config
from monitor.detectors import profile_variability
from monitor.errors import ConfigError
from monitor.evaluation.windows import WindowEvaluator
from monitor.profiles import OVERALL, ProfileSet, profile_frame, specs_for
from monitor.storage import (
    DriftResultRow,
    WindowCount,
    WindowProfile,
    mark_changed,
    transaction,
)
from tests.conftest import run_cli
from tests.monitor.detectors.test_thresholds import current_frame, reference_frame

START = datetime(2026, 11, 30, 12, tzinfo=UTC)


def _store_window(engine: Engine, model: str, window: ProfileSet) -> None:
    end = START + timedelta(hours=1)
    with transaction(engine) as s:
        for (key, column), prof in window.profiles.items():
            s.add(
                WindowProfile(
                    model=model, version="1", window_start=START, window_end=end,
                    slice_key=key, column=column, kind=prof.kind, n=prof.n,
                    payload=prof.to_bytes(),
                )
            )  # fmt: skip
        s.add(
            WindowCount(
                model=model, version="1", window_start=START, window_end=end,
                slice_key=OVERALL, events=window.n_rows,
            )
        )  # fmt: skip
        # As ingest does: the changed window is marked for the evaluate job in the same
        # transaction (the job reads markers, it does not scan profiles).
        mark_changed(s, "drift", [(model, "1", START, end)])


def test_baseline_stores_variability_and_old_baselines_have_none(engine: Engine) -> None:
    frame = reference_frame(2, 4000)
    specs = specs_for(list(frame.columns), frame)
    whole = profile_frame(frame, specs)
    variability = profile_variability(frame, specs, whole, chunks=8)
    save_baseline(engine, "m", "1", whole, variability=variability)
    save_baseline(engine, "m", "old", whole)
    assert load_stored_baseline(engine, "m", "1").variability == variability
    assert load_stored_baseline(engine, "m", "old").variability is None


def test_daemon_evaluation_honours_the_configured_strategy(engine: Engine) -> None:
    frame = reference_frame()
    specs = specs_for(list(frame.columns), frame)
    whole = profile_frame(frame, specs)
    variability = profile_variability(frame, specs, whole)
    # a: reference strategy, baseline with variability; b: the same on an old baseline
    # (no variability: constant fallback); c: constant strategy.
    save_baseline(engine, "a", "1", whole, variability=variability)
    save_baseline(engine, "b", "1", whole)
    save_baseline(engine, "c", "1", whole, variability=variability)
    window = profile_frame(current_frame(11, wander=0.5), specs)  # a level the reference had
    models = []
    for name, strategy in (("a", "reference"), ("b", "reference"), ("c", "constant")):
        _store_window(engine, name, window)
        models.append({"name": name, "drift": {"thresholds": {"strategy": strategy}}})
    config = parse_config({"models": models}, env={})
    WindowEvaluator(engine, config.models, 3600).run()
    with transaction(engine) as s:
        rows = s.scalars(select(DriftResultRow).where(DriftResultRow.column == "wander")).all()
        got = {r.model: (r.status, r.threshold_by, r.threshold) for r in rows}
    assert got["a"][:2] == ("ok", "reference") and got["a"][2] > 0.3
    assert got["b"] == ("drift", "constant", 0.1)
    assert got["c"] == ("drift", "constant", 0.1)


@pytest.mark.parametrize(
    ("thresholds", "message"),
    [
        ({"strategy": "sigma"}, "models[0].drift.thresholds.strategy"),
        ({"sigma": 3}, "unknown key 'models[0].drift.thresholds.sigma'"),
        ({"k": -1}, "models[0].drift.thresholds.k"),
        ({"floor_fraction": "high"}, "models[0].drift.thresholds.floor_fraction"),
    ],
)
def test_config_rejects_bad_threshold_settings(thresholds: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_config({"models": [{"name": "m", "drift": {"thresholds": thresholds}}]}, env={})


def test_config_defaults_to_constant() -> None:
    [model] = parse_config({"models": [{"name": "m"}]}, env={}).models
    t = model.drift.thresholds
    assert (t.strategy, t.k, t.floor_fraction) == ("constant", 3.0, 0.5)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("thresholds")
    ref, cur = root / "ref.parquet", root / "cur.parquet"
    reference_frame().to_parquet(ref)
    current_frame(5, wander=0.5).to_parquet(cur)
    return ref, cur


@pytest.mark.parametrize(
    ("args", "code", "by"),
    [
        ([], 1, {"constant"}),
        (["--thresholds", "constant"], 1, {"constant"}),
        (["--thresholds", "reference"], 0, {"reference", "floor"}),
        # k = 0: the band is the mean alone, so the wandering column drifts again
        (["--thresholds", "reference", "--threshold-k", "0"], 1, {"reference", "floor"}),
    ],
)
def test_drift_cli_selects_the_strategy(
    files: tuple[Path, Path], tmp_path: Path, args: list[str], code: int, by: set[str]
) -> None:
    ref, cur = files
    out = run_cli(
        "drift", str(ref), str(cur), "--json", str(tmp_path / "d.json"), "--fail-on-drift", *args
    )
    assert out.returncode == code, out.stderr
    rows = json.loads((tmp_path / "d.json").read_text())["results"]
    assert {r["threshold_by"] for r in rows} == by
    if code == 1:
        assert "DRIFT wander wasserstein" in out.stdout and " by " in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--thresholds", "sigma"], "unknown threshold strategy 'sigma'; valid: constant, ref"),
        (["--thresholds", "reference", "--threshold-k", "-2"], "threshold k must be"),
        (["--thresholds", "reference", "--reference-chunks", "0"], "chunks must be at least 1"),
    ],
)
def test_drift_cli_bad_threshold_options_exit_2(
    files: tuple[Path, Path], args: list[str], message: str
) -> None:
    ref, cur = files
    out = run_cli("drift", str(ref), str(cur), *args)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_baseline_cli_stores_chunks_or_not(files: tuple[Path, Path], tmp_path: Path) -> None:
    ref, _ = files
    db = f"sqlite:///{tmp_path / 'mw.db'}"
    assert run_cli("db", "upgrade", "--database-url", db).returncode == 0
    base = ["baseline", "create", "--model", "m", "--database-url", db, str(ref)]
    made = run_cli(*base, "--version", "1")
    assert made.returncode == 0 and "variability of 10 chunks" in made.stdout, made.stderr
    plain = run_cli(*base, "--version", "2", "--chunks", "0")
    assert plain.returncode == 0 and "variability" not in plain.stdout
    bad = run_cli(*base, "--version", "3", "--chunks", "-1")
    expected = "modelwatch: error: --chunks must be 0 or more, got -1"
    assert bad.returncode == 2 and bad.stderr.strip() == expected
    from monitor.storage import make_engine

    engine = make_engine(db)
    stored = load_stored_baseline(engine, "m", "1").variability
    assert stored is not None and stored.chunks == 10 and stored.chunk_rows == 2000
    assert load_stored_baseline(engine, "m", "2").variability is None
