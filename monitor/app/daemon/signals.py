"""The monitor's stored results as alert signals: the latest window of each model version.

Alert rules see the current state; an alert whose subject no longer drifts in the newest window
resolves. Labels are bounded (model, version, column, slice, method), never the window.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Table, TextualSelect, func, or_, select, text
from sqlalchemy.engine import Engine

from alerts import Signal
from alerts.annotations import decision_details
from monitor.config import ModelConfig
from monitor.estimation import MULTIVARIATE_METRIC
from monitor.failures import redact
from monitor.fairness import COMPARISONS, NO_LABELS, PARITY
from monitor.outcomes import FAMILY_ALPHA
from monitor.profiles import key_of, parse_slice_key, slice_label
from monitor.profiles.serving import ServingSummary
from monitor.slo.evaluate import ServingWindow, evaluate_windows, version_prices
from monitor.storage import (
    DriftResultRow,
    EstimatedResultRow,
    FairnessResultRow,
    GateRun,
    OutcomeResultRow,
    WindowServing,
    session_factory,
)

log = logging.getLogger(__name__)

FIRING_DRIFT = ("drift", "missing")


def latest_rows(engine: Engine, table: Any, model: str) -> list[Any]:
    """Rows of the newest window of each version of `model`: index lookups, not a scan.

    Versions are found by a skip scan (the next version after the previous one), and each
    version's newest window by a max over the result key's index, so the cost does not grow
    with the history kept.
    """
    out: list[Any] = []
    with session_factory(engine)() as s:
        for version in s.scalars(_versions(table, model)):
            newest = (
                select(func.max(table.window_start))
                .where(table.model == model, table.version == version)
                .scalar_subquery()
            )
            out += s.scalars(
                select(table).where(
                    table.model == model, table.version == version, table.window_start == newest
                )
            )
    return out


# Models per statement of `latest_rows_of`.
LATEST_CHUNK = 250
RowsOf = Callable[[Any, str], list[Any]]


def latest_rows_of(engine: Engine, table: Any, models: Iterable[str]) -> dict[str, list[Any]]:
    """`latest_rows` of every model of `models`, by model. On PostgreSQL one statement per
    `LATEST_CHUNK` models making the same index lookups per model and version (a lateral
    join), instead of two statements and a transaction per model: a tick's signals of 1,000
    freshly evaluated models cost ~3,000 round trips and 126,000 ORM objects (bench/fleet.py:
    the tick's rules outlasted its interval). Elsewhere per model. Rows are Core rows
    (attributes by column name), not ORM objects."""
    names = list(dict.fromkeys(models))
    if engine.dialect.name != "postgresql":
        return {m: latest_rows(engine, table, m) for m in names}
    out: dict[str, list[Any]] = {m: [] for m in names}
    stmt = _latest_statement(table.__table__)
    with engine.connect() as conn:
        # JIT compiling the plan of a statement this size costs more than running it.
        conn.execute(text("SET LOCAL jit = off"))
        for i in range(0, len(names), LATEST_CHUNK):
            for row in conn.execute(stmt, {"models": names[i : i + LATEST_CHUNK]}).all():
                out[row.model].append(row)
    return out


class LatestRows:
    """A tick's newest result rows of the models it reads (`RowsOf`), read fleet-wide in
    chunks of `LATEST_CHUNK` models (`latest_rows_of`: one statement each) as the models are
    asked for in the order of `models` (give them in the order they will be asked for: a
    model of another chunk than the one held reads its chunk again), one chunk per table held
    at a time (126,000 rows of 1,000 models at once added ~150 MiB to a replica's peak); a
    model outside `models`, or a table whose read failed, is read per model (so a failure is
    that model's, recorded as its item, as before)."""

    def __init__(self, engine: Engine, models: Iterable[str]) -> None:
        self.engine = engine
        self.models = list(dict.fromkeys(models))
        self._at = {m: i // LATEST_CHUNK for i, m in enumerate(self.models)}
        self._held: dict[Any, tuple[int, dict[str, list[Any]]] | None] = {}

    def __call__(self, table: Any, model: str) -> list[Any]:
        chunk = self._at.get(model)
        held = self._held.get(table, (-1, {}))
        if chunk is not None and held is not None and held[0] != chunk:
            held = self._held[table] = self._read(table, chunk)
        if chunk is None or held is None:
            return latest_rows(self.engine, table, model)
        return held[1][model]

    def _read(self, table: Any, chunk: int) -> tuple[int, dict[str, list[Any]]] | None:
        names = self.models[chunk * LATEST_CHUNK : (chunk + 1) * LATEST_CHUNK]
        try:
            return chunk, latest_rows_of(self.engine, table, names)
        except Exception as exc:  # each model's own read meets it as its item
            log.info("newest %s of the fleet unread (%s); per model", table.__tablename__,
                     redact(exc))  # fmt: skip
            return None


@functools.cache
def _latest_statement(table: Table) -> TextualSelect:
    """Per model (`unnest`): its versions by a recursive skip scan, each version's newest
    window by a max, then that window's rows (`OFFSET 0` keeps the last lookup a parameterized
    index scan: flattened into a hash join, it read every window of the model's history)."""
    t, cols = table.name, table.c
    listed = ", ".join(f'r."{c.name}"' for c in cols)
    sql = f"""
SELECT {listed} FROM unnest(CAST(:models AS text[])) AS m(model)
CROSS JOIN LATERAL (
  WITH RECURSIVE v(version) AS (
    SELECT min(d.version) FROM {t} d WHERE d.model = m.model
    UNION ALL
    SELECT (SELECT min(d.version) FROM {t} d WHERE d.model = m.model AND d.version > v.version)
    FROM v WHERE v.version IS NOT NULL
  )
  SELECT v.version, (SELECT max(d.window_start) FROM {t} d
                     WHERE d.model = m.model AND d.version = v.version) AS newest
  FROM v WHERE v.version IS NOT NULL
) n
CROSS JOIN LATERAL (
  SELECT * FROM {t} r
  WHERE r.model = m.model AND r.version = n.version AND r.window_start = n.newest OFFSET 0
) r"""
    return text(sql).columns(*cols)


def latest_fairness_rows(engine: Engine, model: str) -> list[Any]:
    """Fairness rows of each version of `model`: demographic parity's (`PARITY`) of its newest
    window, the label-based metrics' of its newest window with labels (the newest window
    usually still waits for them: its label-based rows only say "no labels yet")."""
    t = FairnessResultRow
    out: list[Any] = []
    with session_factory(engine)() as s:
        for version in s.scalars(_versions(t, model)):
            mine = (t.model == model, t.version == version)
            newest = select(func.max(t.window_start)).where(*mine).scalar_subquery()
            labelled = (
                select(func.max(t.window_start))
                .where(*mine, t.metric == COMPARISONS[2], or_(t.reason.is_(None),
                                                              t.reason != NO_LABELS))
                .scalar_subquery()
            )  # fmt: skip
            out += s.scalars(select(t).where(*mine, t.window_start == newest,
                                             t.metric.in_(PARITY)))  # fmt: skip
            out += s.scalars(select(t).where(*mine, t.window_start == labelled,
                                             t.metric.not_in(PARITY)))  # fmt: skip
    return out


def _versions(table: Any, model: str) -> Any:
    first = (
        select(func.min(table.version).label("v"))
        .where(table.model == model)
        .cte("versions", recursive=True)
    )
    following = (
        select(func.min(table.version))
        .where(table.model == model, table.version > first.c.v)
        .scalar_subquery()
    )
    versions = first.union_all(select(following).where(first.c.v.is_not(None)))
    return select(versions.c.v).where(versions.c.v.is_not(None))


def _latest(engine: Engine, rows_of: RowsOf | None, table: Any, model: str) -> list[Any]:
    """The model's newest rows of `table`: from `rows_of` (a tick's fleet-wide read,
    `latest_rows_of`) when given, else read now."""
    return latest_rows(engine, table, model) if rows_of is None else rows_of(table, model)


def drift_signals(
    engine: Engine, models: Iterable[str], now: datetime, rows_of: RowsOf | None = None
) -> list[Signal]:
    """A `drift` signal per column/slice/method and a `drift_count` per model version.

    `missing` columns fire (method `schema`) and count as drifted; `new` ones do not fire.
    """
    out: list[Signal] = []
    for model in models:
        rows = _latest(engine, rows_of, DriftResultRow, model)
        drifted: dict[str, set[str]] = {}
        for r in rows:
            if r.status == "insufficient_data":
                continue
            labels = {
                "model": model,
                "version": r.version,
                "column": r.column,
                "slice": slice_label(r.slice_key),
                "method": r.method,
            }
            # A baseline column the window lacks (`missing`) is itself worth an alert.
            firing = r.status in FIRING_DRIFT
            out.append(Signal("drift", labels, r.value, r.threshold, firing, now))
            drifted.setdefault(r.version, set())
            if firing and not r.slice_key:
                drifted[r.version].add(r.column)
        for version, columns in drifted.items():
            out.append(
                Signal(
                    "drift_count",
                    {"model": model, "version": version},
                    float(len(columns)),
                    None,
                    bool(columns),
                    now,
                )
            )
    return out


def outcome_signals(
    engine: Engine, models: Iterable[str], now: datetime, rows_of: RowsOf | None = None
) -> list[Signal]:
    """An `outcome` signal per metric and slice of the latest labelled window, with the level
    its verdict was decided at for the annotations (`decision_details`)."""
    out: list[Signal] = []
    for model in models:
        rows = _latest(engine, rows_of, OutcomeResultRow, model)
        families = _families(rows)
        for r in rows:
            if r.status == "insufficient_data" or r.baseline_value is None:
                continue
            labels = {
                "model": model,
                "version": r.version,
                "metric": r.metric,
                "slice": slice_label(r.slice_key),
            }
            firing = r.status == "degraded"
            details = decision_details(r.level, families.get(r.version, 1))
            out.append(Signal("outcome", labels, r.value, r.baseline_value, firing, now, details))
    return out


def _families(rows: Iterable[OutcomeResultRow]) -> dict[str, int]:
    """Per version, how many results of its newest window Holm decided together: those with a
    level, when any is stricter than one result's own (else each was decided alone: 1)."""
    levels: dict[str, list[float]] = {}
    for r in rows:
        if r.level is not None:
            levels.setdefault(r.version, []).append(r.level)
    return {v: len(ls) if min(ls) < FAMILY_ALPHA else 1 for v, ls in levels.items()}


def fairness_signals(engine: Engine, models: Iterable[str], now: datetime) -> list[Signal]:
    """A `fairness` signal per judged metric, attribute and group of the newest window
    (demographic parity) or newest labelled window (the others; `latest_fairness_rows`);
    per-group rates, which have no bound, and `insufficient_data` send none."""
    out: list[Signal] = []
    for model in models:
        for r in latest_fairness_rows(engine, model):
            if r.status == "insufficient_data" or r.threshold is None:
                continue
            group = parse_slice_key(r.slice_key) or {}
            labels = {
                "model": model,
                "version": r.version,
                "attribute": r.attribute,
                "metric": r.metric,
                "group": group.get(r.attribute, "all"),
            }
            firing = r.status == "violation"
            out.append(Signal("fairness", labels, r.value, r.threshold, firing, now))
    return out


def estimate_signals(
    engine: Engine, models: Iterable[str], now: datetime, rows_of: RowsOf | None = None
) -> list[Signal]:
    """Per slice of the newest estimated window: an `estimated_outcome` signal per metric with
    a reference threshold, and a `multivariate_drift` signal where bounds exist."""
    out: list[Signal] = []
    for model in models:
        for r in _latest(engine, rows_of, EstimatedResultRow, model):
            if r.status == "insufficient_data":
                continue
            labels = {"model": model, "version": r.version, "slice": slice_label(r.slice_key)}
            if r.metric == MULTIVARIATE_METRIC:
                if r.threshold_high is not None:
                    out.append(Signal("multivariate_drift", labels, r.value, _crossed(r),
                                      r.status == "drift", now))  # fmt: skip
            elif (bound := _estimate_bound(r)) is not None:
                out.append(Signal("estimated_outcome", {**labels, "metric": r.metric}, r.value,
                                  bound, r.status == "degraded", now))  # fmt: skip
    return out


def _estimate_bound(row: Any) -> float | None:
    """The bound an estimate degrades past: a loss's (regression) upper one, else the lower."""
    return row.threshold_low if row.threshold_high is None else float(row.threshold_high)


def _crossed(row: Any) -> float | None:
    """The bound a mean reconstruction error is judged by: the lower one when it is below it."""
    low = row.threshold_low
    below = row.value is not None and low is not None and row.value < low
    return float(low) if below else row.threshold_high


def slo_signals(engine: Engine, cfg: ModelConfig, now: datetime) -> list[Signal]:
    """An `slo` signal per objective and slice of each version's newest serving window."""
    if cfg.slo is None:
        return []
    windows = [
        ServingWindow(r.model, r.version, r.window_start, r.window_end, r.slice_key,
                      ServingSummary.from_row(r))
        for r in latest_rows(engine, WindowServing, cfg.name)
    ]  # fmt: skip
    return [
        Signal(
            "slo",
            {
                "model": r.model,
                "version": r.version,
                "objective": r.objective,
                "slice": slice_label(r.slice_key),
            },
            r.value,
            r.threshold,
            r.status == "breach",
            now,
        )  # fmt: skip
        for r in evaluate_windows(windows, cfg.slo, now, _prices(engine, cfg))
        if r.status != "insufficient_data"
    ]


def _prices(engine: Engine, cfg: ModelConfig) -> dict[str, float]:
    """The versions' own serving prices, read only when cost is an objective."""
    has_cost = cfg.slo is not None and cfg.slo.cost_per_1k is not None
    return version_prices(engine, cfg.name) if has_cost else {}


def guard_signal(
    model: str,
    version: str,
    verdict: str,
    now: datetime,
    criterion: Mapping[str, Any] | None = None,
) -> Signal:
    """A gate verdict's `criterion` (value, threshold; firing when it failed), or without one
    the verdict itself (criterion `verdict`, whole golden set; firing on `fail`)."""
    labels = {"model": model, "version": version, "verdict": verdict}
    if criterion is None:
        return Signal("guard", {**labels, "criterion": "verdict", "slice": ""}, None, None,
                      verdict == "fail", now)  # fmt: skip
    labels["criterion"] = str(criterion.get("name", ""))
    labels["slice"] = slice_label(key_of(criterion.get("slice")))
    value, threshold = _number(criterion.get("value")), _number(criterion.get("threshold"))
    return Signal("guard", labels, value, threshold, criterion.get("status") == "fail", now)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def guard_signals(engine: Engine, models: Iterable[str], now: datetime) -> list[Signal]:
    """Each criterion of the newest gate run of each model version (a later pass resolves a
    failure); a run without criteria is one signal for its verdict."""
    newest = (
        select(GateRun.model, GateRun.version, func.max(GateRun.id).label("id"))
        .where(GateRun.model.in_(list(models)))
        .group_by(GateRun.model, GateRun.version)
        .subquery()
    )
    with session_factory(engine)() as s:
        runs = s.execute(
            select(GateRun.model, GateRun.version, GateRun.verdict, GateRun.criteria).join(
                newest, GateRun.id == newest.c.id
            )
        ).all()
    out: list[Signal] = []
    for model, version, verdict, criteria in runs:
        each: list[dict[str, Any] | None] = [c for c in criteria or () if isinstance(c, dict)]
        out += [guard_signal(model, version, verdict, now, c) for c in each or [None]]
    return out
