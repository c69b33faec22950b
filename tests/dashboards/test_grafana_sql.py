"""The test-side expander of Grafana macros and template variables."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.dashboards.grafana_sql import GrafanaContext, interval_text

CTX = GrafanaContext(
    time_from=datetime(2026, 1, 1, tzinfo=UTC),
    time_to=datetime(2026, 1, 2, 12, tzinfo=UTC),
    interval_s=3600,
    variables={"model": "fraud", "version": "3", "slice": "city=o'hare"},
)


def test_expands_macros_and_variables_like_grafana() -> None:
    sql = (
        "SELECT $__timeGroupAlias(time, $__interval), sum(x) / ($__interval_ms / 1000.0) "
        "FROM v WHERE $__timeFilter(time) AND model = ${model:sqlstring} "
        "AND version = '${version}' "
        "AND time < $__timeTo() AND time >= $__timeFrom()"
    )
    assert CTX.expand(sql) == (
        'SELECT floor(extract(epoch from time)/3600)*3600 AS "time", sum(x) / (3600000 / 1000.0) '
        "FROM v WHERE time BETWEEN '2026-01-01T00:00:00Z' AND '2026-01-02T12:00:00Z' "
        "AND model = 'fraud' AND version = '3' "
        "AND time < '2026-01-02T12:00:00Z' AND time >= '2026-01-01T00:00:00Z'"
    )


def test_sqlstring_format_quotes_and_escapes() -> None:
    assert CTX.expand("slice = ${slice:sqlstring}") == "slice = 'city=o''hare'"
    with pytest.raises(ValueError, match="unsupported variable format"):
        CTX.expand("${slice:csv}")


def test_unknown_variable_and_leftover_macro_fail() -> None:
    with pytest.raises(KeyError, match=r"\$metric"):
        CTX.expand("SELECT 1 WHERE metric = '$metric'")
    with pytest.raises(ValueError, match="unexpanded"):
        CTX.expand("SELECT $__unixEpochFilter(t)")


@pytest.mark.parametrize(
    ("seconds", "text"), [(30, "30s"), (300, "5m"), (7200, "2h"), (86400, "1d")]
)
def test_interval_text(seconds: int, text: str) -> None:
    assert interval_text(seconds) == text
