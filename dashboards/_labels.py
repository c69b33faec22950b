"""Bounded metric label values: configured slices only, a cap per key, and an "other" bucket."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from monitor.config import ModelConfig
from monitor.errors import InputError
from monitor.profiles import OTHER_VALUE, parse_slice_key, slice_key_from_text

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


def slice_pairs(slice_key: str) -> list[tuple[str, str]] | None:
    """(column, value text) pairs of a slice key, or None when it is malformed.

    Accepts the stored key (``{"region":"eu"}``) and the display form (``region=eu`` or
    ``region=eu,channel=web``); values are in the one slice-key format (`monitor.profiles`).
    """
    try:
        parsed = parse_slice_key(slice_key_from_text(slice_key))
    except InputError:
        return None
    if parsed is None or not all(parsed.values()):
        return None
    return sorted(parsed.items())


class SliceLabels:
    """Turns a result's slice key into a bounded `slice` label value.

    A slice key names configured slice columns and their values (``{"region": "eu"}`` or
    ``region=eu``); an empty key is the whole window (label ``all``). A key naming a column
    that is not among the model's configured `slices`, a key for an unconfigured model, or a
    malformed key maps to ``other``. Past the model's `max_slice_values` distinct values per
    column combination, new values map to ``region=(other)``, the slice-key format's "other".
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
        pairs = slice_pairs(slice_key)
        if config is None or pairs is None or any(c not in config.slices for c, _ in pairs):
            return OTHER
        columns = ",".join(c for c, _ in pairs)
        values = "\x00".join(v for _, v in pairs)
        admitted = self._limiter.limit(f"{model}\x00{columns}", values, config.max_slice_values)
        if admitted == OTHER:
            return ",".join(f"{c}={OTHER_VALUE}" for c, _ in pairs)
        return ",".join(f"{c}={v}" for c, v in pairs)
