"""Outcome metrics of many changed windows at once, like `monitor.evaluation._drift_batch` for
drift.

A batch of one version's windows reads their outcome summaries in one query, computes each
window's metrics in Python by the same functions as a single window
(`monitor.summaries.merged_by_slice`, `results_of`), stores every result in one upsert and
consumes the batch's change markers in the same transaction. A batch that fails is redone window
by window by the caller.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.engine import Engine

from monitor.config import ModelConfig
from monitor.evaluation._fairness import store_window_fairness
from monitor.outcomes import OutcomeResult
from monitor.results.store import store_outcome_windows
from monitor.storage import Change, OutcomeSummaryRow, consume_changes, fetch_rows, transaction
from monitor.summaries import merged_by_slice, results_of


def outcome_batch(
    engine: Engine, cfg: ModelConfig, changes: Sequence[Change]
) -> list[list[OutcomeResult]]:
    """Evaluate, store and consume one version's labelled windows in one transaction; each
    window's results ([] without scored pairs) in the order of `changes`."""
    model, version = changes[0].model, changes[0].version
    t = OutcomeSummaryRow
    stmt = select(t.window_start, t.slice_key, t.payload).where(
        t.model == model, t.version == version, t.window_start.in_([c.start for c in changes])
    )
    with transaction(engine) as s:
        rows: dict[datetime, list[tuple[str, bytes]]] = defaultdict(list)
        for start, key, payload in fetch_rows(s, stmt):
            rows[start].append((key, payload))
        merged = [merged_by_slice(rows[c.start]) for c in changes]
        done = [results_of(cfg, m) for m in merged]
        spans = [((c.start, c.end), r) for c, r in zip(changes, done, strict=True) if r]
        store_outcome_windows(s, model, version, spans)
        windows = [((c.start, c.end), m) for c, m in zip(changes, merged, strict=True)]
        store_window_fairness(s, cfg, version, windows)
        consume_changes(s, "outcome", changes)
    return done
