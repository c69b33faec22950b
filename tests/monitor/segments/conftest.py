"""Frames with and without a planted weak segment."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def planted_frame(n: int = 20_000, seed: int = 0, weak: bool = True) -> Any:
    """Six features (three categorical, three numeric); the segment a=3 AND b=x AND c=high is
    wrong 80% of the time when `weak`, every other row 5% of the time."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "a": rng.integers(0, 4, n),
        "b": rng.choice(["x", "y", "z", "w"], n),
        "c": rng.normal(size=n),
        "d": rng.normal(size=n),
        "e": rng.choice(["p", "q"], n),
        "f": rng.uniform(size=n),
    })  # fmt: skip
    planted = (frame.a == 3) & (frame.b == "x") & (frame.c >= np.quantile(frame.c, 0.8))
    rate = np.where(planted & weak, 0.8, 0.05)
    y = rng.integers(0, 2, n)
    frame["label"] = y
    frame["pred"] = np.where(rng.random(n) < rate, 1 - y, y)
    return frame
