"""Result tables: idempotent upserts of drift and outcome rows on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from monitor.detectors import DriftResult
from monitor.errors import InputError
from monitor.outcomes import OutcomeResult
from monitor.results.store import (
    result_document,
    result_row,
    result_rows,
    store_drift_results,
    store_drift_windows,
    store_outcome_results,
    store_slo_results,
)
from monitor.slo.evaluate import SloResult
from monitor.storage import (
    DriftPeriodResultRow,
    DriftResultRow,
    OutcomePeriodResultRow,
    OutcomeResultRow,
    SloResultRow,
    transaction,
)

START = datetime(2026, 11, 30, 10, tzinfo=UTC)
WINDOW = (START, START + timedelta(hours=1))
DRIFT = [
    DriftResult("amount", None, "numeric", "wasserstein", 0.3, 0.1, 1e-9, 5000, 800, "drift"),
    DriftResult("amount", {"region": "eu"}, "numeric", "wasserstein", None, 0.1, None, 900, 12,
                "insufficient_data"),
]  # fmt: skip


def test_drift_rows_upsert_idempotently(engine: Engine) -> None:
    assert store_drift_results(engine, "fraud", "3", WINDOW, DRIFT) == 2
    again = [replace(DRIFT[0], value=0.05, status="ok"), DRIFT[1]]
    store_drift_results(engine, "fraud", "3", WINDOW, again)
    with transaction(engine) as s:
        rows = s.scalars(select(DriftResultRow).order_by(DriftResultRow.slice_key)).all()
        assert [(r.slice_key, r.value, r.status) for r in rows] == [
            ("", 0.05, "ok"),
            ('{"region":"eu"}', None, "insufficient_data"),
        ]
        assert rows[0].window_start == START and rows[0].window_end.tzinfo is not None
        assert rows[0].p_value == 1e-9 and rows[0].n_current == 800  # exact round trip


def test_drift_windows_store_shared_columns_once_per_batch(engine: Engine) -> None:
    """Several windows in one upsert: each row gets its window, and the model, version and
    computed_at every row shares (sent once per batch on PostgreSQL); a second batch replaces."""
    second = (WINDOW[1], WINDOW[1] + timedelta(hours=1))
    at = datetime(2026, 12, 1, 12, tzinfo=UTC)
    assert store_drift_windows(engine, "fraud", "3", [(WINDOW, DRIFT), (second, DRIFT[:1])],
                               computed_at=at) == 3  # fmt: skip
    later = at + timedelta(minutes=5)
    store_drift_windows(engine, "fraud", "3", [(second, [replace(DRIFT[0], value=0.5)])],
                        computed_at=later)  # fmt: skip
    with transaction(engine) as s:
        rows = s.scalars(
            select(DriftResultRow).order_by(DriftResultRow.window_start, DriftResultRow.slice_key)
        ).all()
        got = [(r.model, r.version, r.window_start, r.window_end, r.slice_key, r.value,
                r.computed_at) for r in rows]  # fmt: skip
    assert got == [
        ("fraud", "3", START, WINDOW[1], "", 0.3, at),
        ("fraud", "3", START, WINDOW[1], '{"region":"eu"}', None, at),
        ("fraud", "3", second[0], second[1], "", 0.5, later),
    ]


def test_outcome_rows_upsert(engine: Engine) -> None:
    res = OutcomeResult("accuracy", {"region": "eu"}, 0.8, 0.75, 0.85, 0.9, 0.05, 400, "degraded")
    store_outcome_results(engine, "fraud", "3", WINDOW, [res])
    store_outcome_results(engine, "fraud", "3", WINDOW, [replace(res, value=0.88, status="ok")])
    with transaction(engine) as s:
        rows = s.scalars(select(OutcomeResultRow)).all()
        assert [(r.metric, r.value, r.status, r.n) for r in rows] == [("accuracy", 0.88, "ok", 400)]


def test_window_must_be_ordered_and_aware(sqlite_engine: Engine) -> None:
    with pytest.raises(InputError, match="not before end"):
        store_drift_results(sqlite_engine, "m", "1", (WINDOW[1], WINDOW[0]), DRIFT)
    with pytest.raises(InputError, match="timezone-aware"):
        store_drift_results(sqlite_engine, "m", "1", (START.replace(tzinfo=None), WINDOW[1]), DRIFT)


def test_all_null_columns_and_a_callers_session(engine: Engine) -> None:
    # Every value/ci null (one array of only NULLs on PostgreSQL), written in the caller's
    # transaction: rolled back with it, committed with it.
    empty = [
        OutcomeResult(m, None, None, None, None, None, None, 3, "insufficient_data")
        for m in ("accuracy", "f1")
    ]
    with pytest.raises(RuntimeError), transaction(engine) as s:
        assert store_outcome_results(s, "fraud", "3", WINDOW, empty) == 2
        raise RuntimeError("the caller fails after storing")
    with transaction(engine) as s:
        assert s.scalars(select(OutcomeResultRow)).all() == []
        store_outcome_results(s, "fraud", "3", WINDOW, empty)
        store_drift_results(s, "fraud", "3", WINDOW, DRIFT)
    with transaction(engine) as s:
        rows = s.scalars(select(OutcomeResultRow).order_by(OutcomeResultRow.metric)).all()
        assert [(r.metric, r.value, r.ci_low, r.n) for r in rows] == [
            ("accuracy", None, None, 3),
            ("f1", None, None, 3),
        ]
        assert len(s.scalars(select(DriftResultRow)).all()) == 2


def test_a_stored_row_reads_back_as_the_document_it_was_stored_from(engine: Engine) -> None:
    # One serialiser for computed results and stored rows: every field of the computed result
    # comes back under the same name (the slice as a dict, None overall).
    store_drift_results(engine, "fraud", "3", WINDOW, DRIFT)
    res = OutcomeResult("accuracy", {"region": "eu"}, 0.8, 0.75, 0.85, 0.9, 0.05, 400, "degraded")
    store_outcome_results(engine, "fraud", "3", WINDOW, [res])
    with transaction(engine) as s:
        drift_rows = s.scalars(select(DriftResultRow).order_by(DriftResultRow.slice_key)).all()
        stored = [result_document(r) for r in drift_rows]
        outcome = result_document(s.scalars(select(OutcomeResultRow)).one())
    for computed, row in zip(DRIFT, stored, strict=True):
        doc = result_document(computed)
        shared = set(doc) - {"kind", "decided_by", "evidence_alpha", "reason"}  # not stored
        assert {f: row[f] for f in shared} == {f: doc[f] for f in shared}
        assert (row["model"], row["window_start"]) == ("fraud", START)
    assert stored[0]["slice"] is None and stored[1]["slice"] == {"region": "eu"}
    assert result_document(DRIFT[0])["decided_by"] == "threshold"
    # the drift report's documented key order lives in DriftResult.to_dict: every field is in it
    assert set(result_document(DRIFT[0])) == {f.name for f in fields(DriftResult)} | {"decided_by"}
    assert {k: outcome[k] for k in result_document(res)} == result_document(res)


def test_slo_rows_are_stored_through_the_same_document(engine: Engine) -> None:
    results = [
        SloResult("fraud", "3", START, "", "latency_p95_ms", 120.0, 100.0, 50, "breach"),
        SloResult("fraud", "3", START, '{"region":"eu"}', "error_rate", None, 0.01, 0, "ok"),
    ]
    assert result_document(results[1])["slice"] == {"region": "eu"}
    assert store_slo_results(engine, "fraud", "3", WINDOW, results) == 2
    with transaction(engine) as s:
        rows = s.scalars(select(SloResultRow).order_by(SloResultRow.slice_key)).all()
        got = [(r.slice_key, r.objective, r.value, r.threshold, r.n, r.status) for r in rows]
    assert got == [
        ("", "latency_p95_ms", 120.0, 100.0, 50, "breach"),
        ('{"region":"eu"}', "error_rate", None, 0.01, 0, "ok"),
    ]


def test_rows_built_column_wise_equal_the_documents_rows() -> None:
    # The store path builds rows without documents (`result_rows`); every table it writes gets
    # the same row as `result_row(result_document(r))`: slices in any key order, unusual values
    # (their canonical text), overall, and a memo shared across calls.
    odd: Any = {"tier": 2, "region": "eu"}  # a non-text value, as a caller might pass
    drift = [*DRIFT, replace(DRIFT[0], slice=odd), replace(DRIFT[1], slice={"region": "eu"})]
    outcome = [
        OutcomeResult("accuracy", {"region": "eu"}, 0.8, 0.75, 0.85, 0.9, 0.05, 400, "degraded"),
        OutcomeResult("f1", None, None, None, None, None, None, 3, "insufficient_data"),
        OutcomeResult("f1", {"region": "eu", "tier": "2"}, 0.5, 0.4, 0.6, None, None, 40, "ok"),
    ]
    cases: list[tuple[Any, Sequence[DriftResult | OutcomeResult]]] = [
        (DriftResultRow, drift), (DriftPeriodResultRow, drift),
        (OutcomeResultRow, outcome), (OutcomePeriodResultRow, outcome),
    ]  # fmt: skip
    memo: dict[object, str] = {}
    for row_type, results in cases:
        table: Any = row_type.__table__
        expected = [result_row(result_document(r), table) for r in results]
        assert result_rows(results, table) == expected
        assert result_rows(results, table, memo) == expected
    drift_table: Any = DriftResultRow.__table__
    assert result_rows(drift, drift_table)[2]["slice_key"] == '{"region":"eu","tier":"2"}'
