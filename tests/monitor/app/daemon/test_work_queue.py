"""The shared evaluation queue's timings (its behaviour with real replicas and a real PostgreSQL:
test_shared_evaluation.py)."""

from __future__ import annotations

from monitor.app.daemon._work_queue import Timings


def test_timings_follow_the_lease() -> None:
    t = Timings.of(300)
    assert (t.heartbeat_s, t.stalled_s, t.wait_s) == (50, 150, 300)
    assert Timings.of(1).heartbeat_s == 0.5 and Timings.of(1).stalled_s == 1.0
