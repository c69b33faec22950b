"""The evaluate tick freezes the heap from before it (full collections skip it) and always
unfreezes it, also when the tick raises, so nothing stays uncollectable."""

from __future__ import annotations

import gc

import pytest

from monitor.daemon.wiring import heap_frozen


def test_heap_frozen_inside_and_unfrozen_after() -> None:
    before = gc.get_freeze_count()
    with heap_frozen():
        assert gc.get_freeze_count() > before
        cycle: list[object] = []
        cycle.append(cycle)  # the tick's own cyclic garbage is still collected
        del cycle
        assert gc.collect() >= 1
    assert gc.get_freeze_count() == before


def test_heap_unfrozen_when_the_tick_raises() -> None:
    before = gc.get_freeze_count()
    with pytest.raises(RuntimeError), heap_frozen():
        raise RuntimeError("tick failed")
    assert gc.get_freeze_count() == before
