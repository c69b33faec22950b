"""The bounded cache per-model state is kept in: least recently used dropped first."""

from __future__ import annotations

import pytest

from monitor.common.cache import BoundedCache


def test_past_its_bound_the_least_recently_used_entry_goes() -> None:
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache["a"], cache["b"] = 1, 2
    assert cache.get("a") == 1  # a is now the most recent
    cache["c"] = 3
    assert cache.keys() == ["a", "c"] and cache.evicted == 1
    assert "b" not in cache and cache.get("b") is None
    assert cache.pop("a") == 1 and len(cache) == 1


def test_a_cache_without_room_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        BoundedCache(0)
