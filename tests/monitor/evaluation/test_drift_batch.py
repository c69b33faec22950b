"""Changed windows are evaluated in batches; the rows equal the window-by-window path's.

On SQLite and PostgreSQL. A batch reads, compares, stores and consumes its windows in one
transaction; a batch that fails is redone window by window, so a corrupt window is its own job
failure and every other window of the batch is stored and consumed.
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import delete, select
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Engine

import monitor.evaluation.windows
from monitor.baselines.store import save_baseline
from monitor.config import ModelConfig
from monitor.config._monitoring import OutcomeConfig
from monitor.evaluation._drift_batch import batches
from monitor.evaluation.windows import WindowEvaluator, changed_windows, labeled_windows
from monitor.failures import list_failures
from monitor.profiles import profile_frame, specs_for
from monitor.storage import (
    DriftResultRow,
    OutcomeResultRow,
    mark_changed,
    session_factory,
    transaction,
)
from tests.monitor.app.daemon.isolation_data import START, WINDOW, events, ingest, poison_window

MODEL = ModelConfig(
    name="fraud",
    slices=["region"],
    outcomes=OutcomeConfig(metrics=["accuracy", "recall", "roc_auc"], min_support=1),
)
WINDOWS = 7


def _traffic(engine: Engine) -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "f0": rng.normal(size=2000),
            "f1": rng.normal(size=2000),
            "region": rng.choice(["eu", "us"], 2000),
        }
    )
    profiles = profile_frame(frame, specs_for(["f0", "f1"], frame, bins=10), ["region"])
    save_baseline(engine, "fraud", "1", profiles)
    batch = events("fraud", ["f0", "f1"], WINDOWS, 60)
    labels = []
    for i, e in enumerate(batch):  # windows drift more and more; regions alternate
        e["features"]["f0"] += int(e["request_id"].split("-")[1]) * 0.3
        e["metadata"] = {"region": "eu" if i % 2 else "us"}
        e["prediction"] = (i * 7 % 10) / 10
        if i % 3:  # two thirds labelled; window 5 none
            label = {"request_id": e["request_id"], "model": "fraud", "label": i % 2}
            labels.append(label | {"timestamp": e["timestamp"]})
    labels = [x for x in labels if "-5-" not in x["request_id"]]
    ingest(engine, [MODEL], batch + labels)


def _outcome_rows(engine: Engine) -> set[tuple[Any, ...]]:
    t = OutcomeResultRow
    cols = (
        t.window_start, t.slice_key, t.metric, t.value, t.ci_low, t.ci_high, t.baseline_value,
        t.tolerance, t.n, t.status, t.window_end, t.model, t.version,
    )  # fmt: skip
    with session_factory(engine)() as s:
        return {tuple(r) for r in s.execute(select(*cols))}


def _rows(engine: Engine) -> set[tuple[Any, ...]]:
    """Every stored drift row but its id and computation time."""
    t = DriftResultRow
    cols = (
        t.window_start, t.slice_key, t.column, t.method, t.status, t.value, t.threshold,
        t.threshold_by, t.p_value, t.n_reference, t.n_current, t.window_end, t.model, t.version,
    )  # fmt: skip
    with session_factory(engine)() as s:
        return {tuple(r) for r in s.execute(select(*cols))}


def _statements(engine: Engine, action: Any) -> list[str]:
    seen: list[str] = []

    def capture(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    sa_event.listen(engine, "before_cursor_execute", capture)
    try:
        action()
    finally:
        sa_event.remove(engine, "before_cursor_execute", capture)
    return seen


def _mark_all(engine: Engine, kinds: tuple[str, ...] = ("drift",)) -> None:
    starts = [START + i * WINDOW for i in range(WINDOWS)]
    with transaction(engine) as s:
        for kind in kinds:
            mark_changed(s, kind, [("fraud", "1", st, st + WINDOW) for st in starts])


def _inserts(statements: list[str], table: str = "drift_results") -> int:
    start = f"INSERT INTO {table}".upper()
    return sum(s.lstrip().upper().startswith(start) for s in statements)


def test_batched_rows_equal_the_window_by_window_rows(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _traffic(engine)
    evaluator = WindowEvaluator(engine, [MODEL], 3600)
    statements = _statements(engine, evaluator.run)
    batched, outcomes = _rows(engine), _outcome_rows(engine)
    assert changed_windows(engine, "fraud") == []  # consumed with the batch
    assert labeled_windows(engine, "fraud", 3600) == []
    # Outcomes of every labelled window (not window 5), overall and per slice, one statement.
    assert {r[0] for r in outcomes} == {START + i * WINDOW for i in range(WINDOWS) if i != 5}
    assert {r[1] for r in outcomes} == {"", '{"region":"eu"}', '{"region":"us"}'}
    assert _inserts(statements, "outcome_results") == 1
    # Every window's rows, overall and per slice, stored by one statement.
    assert len({r[0] for r in batched}) == WINDOWS
    assert {r[1] for r in batched} == {"", '{"region":"eu"}', '{"region":"us"}'}
    assert "drift" in {r[4] for r in batched}
    assert _inserts(statements) == 1

    with transaction(engine) as s:
        s.execute(delete(DriftResultRow))
        s.execute(delete(OutcomeResultRow))
    _mark_all(engine, ("drift", "outcome"))
    monkeypatch.setattr(monitor.evaluation.windows, "batches", functools.partial(batches, size=1))
    one = _statements(engine, WindowEvaluator(engine, [MODEL], 3600).run)
    assert _inserts(one) == WINDOWS
    assert _inserts(one, "outcome_results") == WINDOWS - 1
    assert _rows(engine) == batched
    assert _outcome_rows(engine) == outcomes
    assert changed_windows(engine, "fraud") == []
    assert labeled_windows(engine, "fraud", 3600) == []


def test_a_corrupt_window_fails_alone_and_the_rest_of_its_batch_is_stored(
    engine: Engine,
) -> None:
    _traffic(engine)
    restore = poison_window(engine, "fraud", 3)
    evaluator = WindowEvaluator(engine, [MODEL], 3600)
    done = evaluator.run(now=START)
    bad = START + 3 * WINDOW
    drifted = {e.window.start for e in done if e.drift}
    assert drifted == {START + i * WINDOW for i in range(WINDOWS)} - {bad}
    assert {r[0] for r in _rows(engine)} == drifted
    failures = list_failures(engine, "evaluate")  # its day and week wait for it, unreported
    assert [f.item for f in failures] == [f"drift fraud/1 {bad.isoformat()}"]
    assert "CorruptProfileError" in failures[0].error
    assert [w.start for w in changed_windows(engine, "fraud")] == [bad]  # retried later

    restore()
    assert evaluator.run(now=START) == []  # not due before its backoff
    again = evaluator.run(now=START + timedelta(hours=2))
    assert [e.window.start for e in again if e.drift] == [bad]
    assert list_failures(engine, "evaluate") == []
    assert changed_windows(engine, "fraud") == []
    assert len({r[0] for r in _rows(engine)}) == WINDOWS


def test_a_failing_window_recovers_inside_a_batch(engine: Engine) -> None:
    _traffic(engine)
    restore = poison_window(engine, "fraud", 0)
    evaluator = WindowEvaluator(engine, [MODEL], 3600)
    evaluator.run(now=START)
    assert len(list_failures(engine, "evaluate")) == 1
    restore()
    _mark_all(engine)  # every window changed again: one batch, the recovered window in it
    later = START + timedelta(hours=2)
    statements = _statements(engine, lambda: evaluator.run(now=later))
    assert _inserts(statements) == 1
    assert list_failures(engine, "evaluate") == []
    assert len({r[0] for r in _rows(engine)}) == WINDOWS
