"""Fairness of labelled windows, beside their outcome metrics: the windows' merged per-slice
outcome summaries grouped by protected attribute (`monitor.fairness`), stored in
`fairness_results` in the caller's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.orm import Session

from monitor.config import ModelConfig
from monitor.fairness import FairnessResult, evaluate_fairness, groups_of
from monitor.outcomes.summary import OutcomeSummary
from monitor.results.store import store_fairness_windows

Summaries = Sequence[tuple[dict[str, str] | None, OutcomeSummary]]


def store_window_fairness(
    session: Session,
    cfg: ModelConfig,
    version: str,
    windows: Sequence[tuple[tuple[datetime, datetime], Summaries]],
) -> list[list[FairnessResult]]:
    """Evaluate and store the fairness of each window with labelled pairs; each window's
    results ([] without pairs, or when the model has no `fairness` config)."""
    fc = cfg.fairness
    if fc is None:
        return [[] for _ in windows]
    done = [
        evaluate_fairness(groups_of(summaries, fc.attributes), fc)
        if summaries and summaries[0][1].n
        else []
        for _, summaries in windows
    ]
    spans = [(span, r) for (span, _), r in zip(windows, done, strict=True) if r]
    if spans:
        store_fairness_windows(session, cfg.name, version, spans)
    return done
