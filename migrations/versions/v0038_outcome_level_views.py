"""Outcome views show each result's level: `mw_outcomes` and `mw_outcome_periods` gain `level`.

Revision ID: 0038_outcome_level_views
Revises: 0037_outcome_levels
Create Date: 2026-12-06

`level` (0037_outcome_levels) is the one-sided significance level the result's `degraded`
decision tested its interval at: 0.025 per result, stricter across a family of results
(`outcomes.correction: family`, Holm); null without a verdict and on rows written before 0037.
Each view is dropped and created again as its revision froze it (`mw_outcomes` by
0006_dashboard_views, `mw_outcome_periods` by 0017_scale), with `level` as its last column;
the downgrade restores those definitions. Nothing else reads these views (no view depends on
them), so dropping them is enough on both backends.
"""

from __future__ import annotations

from collections.abc import Callable

from alembic import context, op

revision = "0038_outcome_level_views"
down_revision = "0037_outcome_levels"
branch_labels = None
depends_on = None

# view -> (the revision that froze its definition, the table it reads)
VIEWS = {
    "mw_outcomes": ("0006_dashboard_views", "outcome_results"),
    "mw_outcome_periods": ("0017_scale", "outcome_period_results"),
}


def _frozen(view: str, pg: bool) -> str:
    """The view's SELECT as its revision wrote it (that revision's `_outcomes`)."""
    rev, _ = VIEWS[view]
    script = context.script.get_revision(rev)
    assert script is not None and script.module is not None, rev
    select: Callable[[bool], str] = script.module._outcomes
    return select(pg)


def _with_level(view: str, pg: bool) -> str:
    """The frozen SELECT with `o.level` after its last column."""
    table = VIEWS[view][1]
    sql, tail = _frozen(view, pg), f"\nFROM {table} o"
    if not sql.endswith(tail):  # pragma: no cover - the frozen text never changes
        raise RuntimeError(f"{view}: unexpected frozen definition")
    return f"{sql.removesuffix(tail)},\n  o.level{tail}"


def _replace(define: Callable[[str, bool], str]) -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    for view in VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {view}")
        op.execute(f"CREATE VIEW {view} AS\n{define(view, pg)}")


def upgrade() -> None:
    _replace(_with_level)


def downgrade() -> None:
    _replace(_frozen)
