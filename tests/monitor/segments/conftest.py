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


def features(n: int, rng: Any) -> Any:
    """The six features of `planted_frame`, and the mask of the segment a=3 AND b=x AND c>0.84."""
    frame = pd.DataFrame({
        "a": rng.integers(0, 4, n),
        "b": rng.choice(["x", "y", "z", "w"], n),
        "c": rng.normal(size=n),
        "d": rng.normal(size=n),
        "e": rng.choice(["p", "q"], n),
        "f": rng.uniform(size=n),
    })  # fmt: skip
    return frame, (frame.a == 3) & (frame.b == "x") & (frame.c >= 0.8416)


def scored_frame(n: int = 20_000, seed: int = 0, uncertain: bool = True) -> Any:
    """Calibrated scores with 0/1 labels: confident (near 0 or 1) everywhere except, when
    `uncertain`, in the planted segment, where the positive probability is near one half."""
    rng = np.random.default_rng(seed)
    frame, planted = features(n, rng)
    prob = np.where(rng.random(n) < 0.5, rng.beta(1, 12, n), rng.beta(12, 1, n))
    prob = np.where(planted & uncertain, rng.uniform(0.35, 0.65, n), prob)
    frame["score"] = prob
    frame["label"] = (rng.random(n) < prob).astype(int)
    return frame


def shifted_frame(n: int = 20_000, seed: int = 0, extra: float = 0.0) -> Any:
    """Features only; with `extra` > 0 the planted segment's rows are that much more frequent
    (rows of it added: its share goes from s to s(1 + extra) / (1 + s·extra))."""
    rng = np.random.default_rng(seed)
    frame, planted = features(n, rng)
    if extra > 0:
        more = rng.choice(np.flatnonzero(planted.to_numpy()), int(extra * planted.sum()))
        frame = pd.concat([frame, frame.iloc[more]], ignore_index=True)
    return frame
