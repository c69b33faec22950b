"""Bounded metric label values: configured slices only, a cap per key, and an "other" bucket."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from monitor.config import ModelConfig

OTHER = "other"
ALL_SLICES = "all"


class LabelLimiter:
    """Admits at most `max_values` distinct values per key; later newcomers become "other".

    Values admitted once stay admitted, so a series never changes its label mid-life. Thread-safe:
    collectors and the scheduler record metrics from different threads.
    """

    def __init__(self, max_values: int) -> None:
        if max_values < 1:
            raise ValueError(f"max_values must be >= 1, got {max_values}")
        self.max_values = max_values
        self._seen: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def limit(self, key: str, value: str, max_values: int | None = None) -> str:
        """`value` if it is (or can still be) admitted under `key`, else "other"."""
        cap = self.max_values if max_values is None else max_values
        with self._lock:
            seen = self._seen.setdefault(key, set())
            if value in seen:
                return value
            if len(seen) >= cap:
                return OTHER
            seen.add(value)
            return value


class SliceLabels:
    """Turns a result's slice key into a bounded `slice` label value.

    Slice keys look like ``region=eu`` (one configured slice column and its value) or are empty
    for the whole window (label ``all``). A key whose column is not among the model's configured
    `slices`, a key for an unconfigured model, or a malformed key maps to ``other``; past the
    model's `max_slice_values` distinct values per column, new values map to ``column=other``.
    """

    def __init__(self, models: Iterable[ModelConfig]) -> None:
        self._models = {m.name: m for m in models}
        # Each model's own cap is passed per call; the limiter's default is never used here.
        self._limiter = LabelLimiter(1)

    def label(self, model: str, slice_key: str | None) -> str:
        """The bounded label value for `slice_key` of `model`."""
        if not slice_key or slice_key == ALL_SLICES:
            return ALL_SLICES
        config = self._models.get(model)
        column, sep, value = slice_key.partition("=")
        if config is None or not sep or not value or column not in config.slices:
            return OTHER
        admitted = self._limiter.limit(f"{model}\x00{column}", value, config.max_slice_values)
        return f"{column}={admitted}"
