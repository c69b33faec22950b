"""Reading shadow summaries back: a period's results are a merge of its windows' summaries.

`shadow_results` merges the stored `shadow_windows` rows of [since, until) per (primary
version, shadow version, slice), so a day is a merge of its windows, never a rescan of events;
`window_results` gives the overall slice per window (a series); `latest_results` judges the
newest window with pairs of each version pair, what the evaluate job signals and exports.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.config import ModelConfig
from monitor.profiles import OVERALL
from monitor.shadow.result import ShadowResult, judge
from monitor.shadow.summary import ShadowSummary
from monitor.storage import ShadowWindow

__all__ = ["latest_results", "shadow_results", "window_results"]


def _rows(engine: Engine, model: str, since: datetime, until: datetime | None) -> list[Any]:
    table: Any = ShadowWindow.__table__
    stmt = select(table).where(table.c.model == model, table.c.window_start >= since)
    if until is not None:
        stmt = stmt.where(table.c.window_start < until)
    with Session(engine) as session:
        return list(session.execute(stmt.order_by(table.c.window_start)))


def shadow_results(
    cfg: ModelConfig, engine: Engine, since: datetime, until: datetime
) -> list[ShadowResult]:
    """One result per (primary, shadow version, slice) over the windows of [since, until)."""
    merged: dict[tuple[str, str, str], ShadowSummary] = {}
    for row in _rows(engine, cfg.name, since, until):
        key = (row.primary_version, row.shadow_version, row.slice_key)
        summary = ShadowSummary.from_row(row)
        merged[key] = merged[key].merge(summary) if key in merged else summary
    return [
        _judge(cfg, (cfg.name, *key), since, until, summary)
        for key, summary in sorted(merged.items())
    ]


def window_results(
    cfg: ModelConfig, engine: Engine, since: datetime, until: datetime
) -> list[ShadowResult]:
    """The overall slice of each window of [since, until), per version pair, oldest first."""
    return [
        _judge(cfg, (cfg.name, r.primary_version, r.shadow_version, r.slice_key),
               r.window_start, r.window_end, ShadowSummary.from_row(r))
        for r in _rows(engine, cfg.name, since, until)
        if r.slice_key == OVERALL
    ]  # fmt: skip


def latest_results(cfg: ModelConfig, engine: Engine, since: datetime) -> list[ShadowResult]:
    """Every slice of the newest window (since `since`) of each pair of versions, both set."""
    newest: dict[tuple[str, str], datetime] = {}
    rows: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for row in _rows(engine, cfg.name, since, None):
        if not (row.primary_version and row.shadow_version) or not row.pairs:
            continue
        pair = (row.primary_version, row.shadow_version)
        if pair not in newest or row.window_start > newest[pair]:
            newest[pair], rows[pair] = row.window_start, []
        if row.window_start == newest[pair]:
            rows[pair].append(row)
    return [
        _judge(cfg, (cfg.name, *pair, r.slice_key), r.window_start, r.window_end,
               ShadowSummary.from_row(r))
        for pair in sorted(rows)
        for r in rows[pair]
    ]  # fmt: skip


def _judge(
    cfg: ModelConfig,
    key: tuple[str, str, str, str],
    start: datetime,
    end: datetime,
    summary: ShadowSummary,
) -> ShadowResult:
    assert cfg.shadow is not None
    return judge(key, start, end, summary, cfg.shadow, cfg.outcomes.task)
