"""The mw_* views exist on both backends with the columns dashboards rely on."""

from __future__ import annotations

from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine

from dashboards.views import VIEW_COLUMNS
from monitor.storage import downgrade


def test_views_have_the_contract_columns(engine: Engine) -> None:
    views = set(inspect(engine).get_view_names())
    assert set(VIEW_COLUMNS) <= views
    with engine.connect() as conn:
        for name, columns in VIEW_COLUMNS.items():
            result = conn.execute(text(f"SELECT * FROM {name} LIMIT 0"))
            assert tuple(result.keys()) == columns, name


def test_downgrade_drops_the_views(engine: Engine) -> None:
    downgrade(engine, "0001_foundation")
    assert not {v for v in inspect(engine).get_view_names() if v.startswith("mw_")}
