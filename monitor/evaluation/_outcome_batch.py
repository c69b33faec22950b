"""Outcome metrics of many changed windows at once, like `monitor.evaluation._drift_batch` for
drift.

A batch of one version's windows reads their outcome summaries in one query, computes each
window's metrics in Python by the same functions as a single window
(`monitor.summaries.merged_by_slice`, `results_of`), stores every result in one upsert and
consumes the batch's change markers in the same transaction. A batch that fails is redone window
by window by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Engine

from monitor.config import ModelConfig
from monitor.evaluation._fairness import store_window_fairness
from monitor.outcomes import OutcomeResult
from monitor.results.store import store_outcome_windows
from monitor.storage import Change, consume_changes, transaction
from monitor.summaries import results_of, summaries_by_window


def outcome_batch(
    engine: Engine, cfg: ModelConfig, changes: Sequence[Change]
) -> list[list[OutcomeResult]]:
    """Evaluate, store and consume one version's labelled windows in one transaction; each
    window's results ([] without scored pairs) in the order of `changes`."""
    model, version = changes[0].model, changes[0].version
    with transaction(engine) as s:
        merged = summaries_by_window(s, model, version, [c.start for c in changes])
        done = [results_of(cfg, m) for m in merged]
        spans = [((c.start, c.end), r) for c, r in zip(changes, done, strict=True) if r]
        store_outcome_windows(s, model, version, spans)
        windows = [((c.start, c.end), m) for c, m in zip(changes, merged, strict=True)]
        store_window_fairness(s, cfg, version, windows)
        consume_changes(s, "outcome", changes)
    return done
