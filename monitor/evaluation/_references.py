"""Reference baselines decoded once and kept across evaluation ticks.

Loading and decoding a model's baseline (a profile per column and slice) cost more than the
drift tests of a thin window, and the evaluate job did it every tick for every model with a
changed window. A decoded reference is kept in a bounded cache (`scheduler.reference_cache`
entries, least recently used dropped) and checked every tick against the stored row that
`monitor.baselines.store.chosen_baseline` picks (one small query): a replaced baseline, a new
one of the model's own version, or a deleted one is seen at the next tick.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from sqlalchemy.engine import Engine

from monitor.baselines.store import ChosenBaseline, StoredBaseline, chosen_baseline
from monitor.baselines.store import load_stored_baseline as load
from monitor.common.cache import BoundedCache
from monitor.evaluation._drift_batch import Reference

Build = Callable[[StoredBaseline], Reference]
"""A loaded baseline made the evaluator's reference (its thresholds and attributions)."""


class References:
    """Decoded references by (model, version, baseline name), checked against their row."""

    def __init__(self, maxsize: int = 1000) -> None:
        self.cache: BoundedCache[tuple[str, str, str], tuple[ChosenBaseline, Reference]] = (
            BoundedCache(maxsize)
        )
        self.loads = 0  # baselines loaded and decoded so far (misses)
        self._lock = threading.Lock()  # the scheduler's and the queue worker's threads share it

    def get(
        self,
        engine: Engine,
        key: tuple[str, str, str],
        build: Build,
        rows: Mapping[str, ChosenBaseline | None] | None = None,
    ) -> tuple[ChosenBaseline, Reference] | None:
        """The reference of `key` (model, version, baseline name) as stored now; None without
        a baseline. Loads and `build`s it only when the chosen row is not the cached one.
        `rows`: the chosen rows by version, where the caller read them this tick already."""
        known = rows or {}
        chosen = known[key[1]] if key[1] in known else chosen_baseline(engine, *key)
        with self._lock:
            cached = self.cache.pop(key) if chosen is None else self.cache.get(key)
        if chosen is None:
            return None
        if cached is not None and cached[0] == chosen:
            return cached
        found = (chosen, build(load(engine, key[0], chosen.version, chosen.name)))
        with self._lock:
            self.loads += 1
            self.cache[key] = found
        return found
