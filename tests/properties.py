"""How many examples a property test draws: all of them in the full run, fewer in the fast lane.

`./dev test --fast` sets MODELWATCH_FAST_LANE=1. The fast lane is the edit-and-rerun loop: each
property still runs, on a tenth of its examples (at least 10); the full run (and CI) draws them all.

In CI (`CI` set, as `.ci/run` runs) the examples are derandomized: the same ones every run, so a
submission passes or fails on its code, not on the draw. A property that fails on a fresh draw
here is a finding to fix in the code or to record as a known limit, not a retry.
"""

from __future__ import annotations

import os

from hypothesis import settings

FAST_LANE = os.environ.get("MODELWATCH_FAST_LANE") == "1"
CI = bool(os.environ.get("CI"))
FAST_MIN = 10


def examples(full: int) -> int:
    """`full` in the full run; in the fast lane a tenth of it, at least FAST_MIN."""
    return min(full, max(FAST_MIN, full // 10)) if FAST_LANE else full


def load_profile() -> None:
    """Scale the default example count too, for property tests that name none; derandomize in CI."""
    settings.register_profile("modelwatch", max_examples=examples(100), derandomize=CI)
    settings.load_profile("modelwatch")
