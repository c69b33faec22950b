"""Gauges rewritten on every refresh: a series not written in the latest refresh is removed.

A model version that stopped serving, or whose results retention deleted, must not keep
exporting its last value forever (an alert on it would never resolve).
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Gauge


class Refresh:
    """Tracks which series of each gauge a refresh wrote; `sweep()` drops the rest."""

    def __init__(self) -> None:
        self._previous: dict[Gauge, set[tuple[str, ...]]] = {}
        self._current: dict[Gauge, set[tuple[str, ...]]] = {}

    def set(self, gauge: Gauge, labels: tuple[str, ...], value: float) -> None:
        """Write one series and remember it for this refresh."""
        gauge.labels(*labels).set(value)
        self._current.setdefault(gauge, set()).add(labels)

    def keep(self, gauges: Iterable[Gauge], first: str) -> None:
        """Keep the previous refresh's series of `gauges` whose first label value is `first`
        (a model whose read failed goes on exporting its last values instead of a gap)."""
        for gauge in gauges:
            kept = {labels for labels in self._previous.get(gauge, ()) if labels[0] == first}
            self._current.setdefault(gauge, set()).update(kept)

    def sweep(self) -> int:
        """Remove the series written in the previous refresh but not in this one; how many."""
        removed = 0
        for gauge, old in self._previous.items():
            for labels in old - self._current.get(gauge, set()):
                gauge.remove(*labels)
                removed += 1
        self._previous, self._current = self._current, {}
        return removed
