"""Expands a panel's SQL the way Grafana does before it reaches PostgreSQL.

Semantics (Grafana's PostgreSQL datasource, single-value template variables):

1. Template variables first, as Grafana's frontend does: `$name` and `${name}` become the
   variable's value verbatim; `${name:sqlstring}` becomes the value as an SQL string literal
   (in single quotes, quotes doubled), Grafana's `sqlstring` format. `$__interval` becomes
   the interval as Grafana writes it (`1h`, `5m`, `30s`) and
   `$__interval_ms` the interval in milliseconds. An unknown variable is an error.
2. Then the backend macros:
   `$__timeFilter(col)` -> `col BETWEEN 'FROM' AND 'TO'` (RFC 3339 UTC; inclusive, as Grafana);
   `$__timeFrom()` / `$__timeTo()` -> `'FROM'` / `'TO'`;
   `$__timeGroup(col, 1h)` -> `floor(extract(epoch from col)/3600)*3600`;
   `$__timeGroupAlias(col, 1h)` -> the same `AS "time"` (epoch seconds: Grafana turns a numeric
   `time` column into timestamps).
   Any `$` left over is an error, so a typo cannot reach the database unnoticed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_VARIABLE = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\$(?!__)(\w+)")
_MACRO = re.compile(r"\$__(timeGroupAlias|timeGroup|timeFilter|timeFrom|timeTo)\(([^()]*)\)")


def interval_text(seconds: int) -> str:
    """How Grafana writes an interval: the largest unit that divides it."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def interval_seconds(text: str) -> float:
    match = re.fullmatch(r"'?(\d+)(ms|s|m|h|d)'?", text.strip())
    if match is None:
        raise ValueError(f"cannot parse interval {text!r}")
    return int(match.group(1)) * _UNITS[match.group(2)]


def _rfc3339(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class GrafanaContext:
    """The dashboard state a query is expanded for."""

    time_from: datetime
    time_to: datetime
    interval_s: int
    variables: Mapping[str, str]

    def _variable(self, match: re.Match[str]) -> str:
        name, fmt = match.group(1) or match.group(3), match.group(2)
        if name not in self.variables:
            raise KeyError(f"unknown template variable ${name}")
        value = self.variables[name]
        if fmt is None:
            return value
        if fmt != "sqlstring":
            raise ValueError(f"unsupported variable format {fmt!r} in ${{{name}:{fmt}}}")
        return "'" + value.replace("'", "''") + "'"

    def _macro(self, match: re.Match[str]) -> str:
        name, args = match.group(1), [a.strip() for a in match.group(2).split(",")]
        if name == "timeFilter":
            return f"{args[0]} BETWEEN '{_rfc3339(self.time_from)}' AND '{_rfc3339(self.time_to)}'"
        if name == "timeFrom":
            return f"'{_rfc3339(self.time_from)}'"
        if name == "timeTo":
            return f"'{_rfc3339(self.time_to)}'"
        step = interval_seconds(args[1])
        group = f"floor(extract(epoch from {args[0]})/{step:g})*{step:g}"
        return f'{group} AS "time"' if name == "timeGroupAlias" else group

    def expand(self, sql: str) -> str:
        """The SQL PostgreSQL receives for this panel query."""
        text = sql.replace("$__interval_ms", str(self.interval_s * 1000))
        text = text.replace("$__interval", interval_text(self.interval_s))
        text = _VARIABLE.sub(self._variable, text)
        text = _MACRO.sub(self._macro, text)
        if "$" in text:
            raise ValueError(f"unexpanded macro or variable left in: {text}")
        return text
