"""How many examples a property test draws: all of them in the full run, fewer in the fast lane.

`./dev test --fast` sets MODELWATCH_FAST_LANE=1. The fast lane is the edit-and-rerun loop: each
property still runs, on a tenth of its examples (at least 10); the full run (and CI) draws them all.
"""

from __future__ import annotations

import os

from hypothesis import settings

FAST_LANE = os.environ.get("MODELWATCH_FAST_LANE") == "1"
FAST_MIN = 10


def examples(full: int) -> int:
    """`full` in the full run; in the fast lane a tenth of it, at least FAST_MIN."""
    return min(full, max(FAST_MIN, full // 10)) if FAST_LANE else full


def load_profile() -> None:
    """Scale the default example count too, for property tests that name none."""
    settings.register_profile("fast-lane", max_examples=examples(100))
    if FAST_LANE:
        settings.load_profile("fast-lane")
