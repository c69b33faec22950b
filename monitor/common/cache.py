"""A bounded least-recently-used cache: per-model state loaded on first use, kept within a bound.

A daemon watching thousands of models must not hold every model's state (column specs,
baselines) for its whole life: state is loaded when a model is first used, and past `maxsize`
entries the least recently used one is dropped (and loaded again if its model comes back).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """At most `maxsize` entries; reading or writing one makes it the most recently used."""

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError(f"cache maxsize must be at least 1, got {maxsize}")
        self.maxsize = maxsize
        self._items: OrderedDict[K, V] = OrderedDict()
        self.evicted = 0  # entries dropped for room so far

    def get(self, key: K) -> V | None:
        """The value of `key` (now the most recent), or None when absent."""
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def __setitem__(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.maxsize:
            self._items.popitem(last=False)
            self.evicted += 1

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def pop(self, key: K) -> V | None:
        """Drop `key`; its value, or None when absent."""
        return self._items.pop(key, None)

    def keys(self) -> list[K]:
        """The keys held, least recently used first."""
        return list(self._items)

    def items(self) -> list[tuple[K, V]]:
        """The entries held, least recently used first."""
        return list(self._items.items())
