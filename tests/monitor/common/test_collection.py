"""`collector_paused`: the cyclic collector paused for a block, nested and across threads."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from monitor.common.collection import collector_paused


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_then_resumed_even_on_error() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a failing window")
    assert gc.isenabled()


def test_nested_pauses_resume_at_the_outermost() -> None:
    gc.enable()
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_threads_resume_when_the_last_ends() -> None:
    """Thread A pauses, B pauses, A ends: still paused for B; B ends: resumed."""
    gc.enable()
    a_in, b_in, a_out, b_out = (threading.Event() for _ in range(4))
    seen: dict[str, bool] = {}

    def a() -> None:
        with collector_paused():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with collector_paused():
            b_in.set()
            a_out.wait(5)
            seen["after A ended"] = gc.isenabled()
        b_out.set()

    threads = [threading.Thread(target=f) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"after A ended": False}
    assert gc.isenabled()
