"""Fairness of windows: each window's groups counted per protected attribute
(`monitor.fairness`) from its merged per-slice outcome summaries (labelled rows: error rates,
calibration) and its per-slice selection counts in `window_counts` (all predictions:
demographic parity), stored in `fairness_results` in the caller's transaction.

A window is evaluated beside its outcome metrics when labels join, and when its predictions
change (`fairness_windows`, from the drift step), so demographic parity is there before any
label arrives.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from monitor.config import ModelConfig
from monitor.fairness import FairnessResult, evaluate_fairness, groups_of
from monitor.outcomes.summary import OutcomeSummary
from monitor.profiles import parse_slice_key
from monitor.results.store import store_fairness_windows
from monitor.storage import WindowCount, transaction
from monitor.summaries import summaries_by_window

Summaries = Sequence[tuple[dict[str, str] | None, OutcomeSummary]]
Selections = list[tuple[dict[str, str] | None, int, int]]


def store_window_fairness(
    session: Session,
    cfg: ModelConfig,
    version: str,
    windows: Sequence[tuple[tuple[datetime, datetime], Summaries]],
) -> list[list[FairnessResult]]:
    """Evaluate and store the fairness of each window with labelled pairs or scored
    predictions; each window's results ([] without either, or when the model has no
    `fairness` config)."""
    fc = cfg.fairness
    if fc is None:
        return [[] for _ in windows]
    chosen = _selections(session, cfg.name, version, [span[0] for span, _ in windows])
    done = []
    for (_, summaries), selections in zip(windows, chosen, strict=True):
        labelled = bool(summaries) and summaries[0][1].n > 0
        found = labelled or bool(selections)
        done.append(
            evaluate_fairness(groups_of(summaries, fc.attributes, selections), fc) if found else []
        )
    spans = [(span, r) for (span, _), r in zip(windows, done, strict=True) if r]
    if spans:
        store_fairness_windows(session, cfg.name, version, spans)
    return done


def fairness_windows(
    engine: Engine, cfg: ModelConfig, version: str, spans: Sequence[tuple[datetime, datetime]]
) -> list[list[FairnessResult]]:
    """Evaluate and store the fairness of one version's windows whose predictions changed, in
    one transaction (labels, if any, included)."""
    with transaction(engine) as s:
        summaries = summaries_by_window(s, cfg.name, version, [start for start, _ in spans])
        return store_window_fairness(s, cfg, version, list(zip(spans, summaries, strict=True)))


def _selections(
    session: Session, model: str, version: str, starts: Sequence[datetime]
) -> list[Selections]:
    """Each window's per-slice (slice, scored, selected) prediction counts, in one query."""
    t = WindowCount
    stmt = select(t.window_start, t.slice_key, t.scored, t.selected).where(
        t.model == model, t.version == version, t.window_start.in_(list(starts)), t.scored > 0
    )
    found: dict[datetime, Selections] = {}
    for start, key, scored, selected in session.execute(stmt):
        found.setdefault(start, []).append((parse_slice_key(key), scored, selected))
    return [found.get(start, []) for start in starts]
