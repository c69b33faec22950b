"""Weak segments, every mode: false discoveries with nothing planted, and power with a segment
planted, over many seeds.

`PYTHONPATH=. python bench/segments_fdr.py [--seeds 200] [--rows 3000] [--alpha 0.1]`.
Six features (a, c: integer codes 0–3; b: four strings; x, y: normal; z: uniform), binned in 4.
Planted segment: a = 3 AND b = "s0" AND x in its top quarter (1.6% of the rows).

- labels: 0/1 errors at 5%; planted: 60% inside.
- estimated: calibrated scores near 0 or 1 (Beta(1, 12) or Beta(12, 1)), labels drawn from them;
  planted: scores uniform on [0.35, 0.65] inside. The calibration is fitted on a reference of
  the same kind drawn with another seed.
- drift: reference and current drawn alike; planted: the segment's rows are 2.5 times as many
  in the current window.

With nothing planted, every reported segment is a false discovery, so the share of seeds that
report anything is the family-wise error, which Benjamini–Hochberg bounds by α under the
global null. With a segment planted, power is the share of seeds whose top segment is it.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd

from monitor.estimation import fit_calibration
from monitor.segments import (
    Options,
    SegmentReport,
    find_drift_segments,
    find_estimated_segments,
    find_segments,
)

FEATURES = ["a", "b", "c", "x", "y", "z"]


def draw(rows: int, rng: Any) -> tuple[Any, Any]:
    """The features, and the planted segment's mask."""
    cols = {"a": rng.integers(0, 4, rows), "b": rng.choice(["s0", "s1", "s2", "s3"], rows),
            "c": rng.integers(0, 4, rows), "x": rng.normal(size=rows),
            "y": rng.normal(size=rows), "z": rng.uniform(size=rows)}  # fmt: skip
    frame = pd.DataFrame(cols)
    return frame, (frame.a == 3) & (frame.b == "s0") & (frame.x >= 0.6745)


def scored(rows: int, rng: Any, planted: bool) -> Any:
    frame, inside = draw(rows, rng)
    p = np.where(rng.random(rows) < 0.5, rng.beta(1, 12, rows), rng.beta(12, 1, rows))
    frame["score"] = np.where(inside & planted, rng.uniform(0.35, 0.65, rows), p)
    frame["label"] = (rng.random(rows) < frame.score).astype(int)
    return frame


def labels(seed: int, rows: int, planted: bool, opts: Options) -> SegmentReport:
    rng = np.random.default_rng(seed)
    frame, inside = draw(rows, rng)
    y = rng.integers(0, 2, rows)
    wrong = rng.random(rows) < np.where(inside & planted, 0.6, 0.05)
    frame["label"], frame["pred"] = y, np.where(wrong, 1 - y, y)
    return find_segments(frame, "label", "pred", FEATURES, min_support=opts.min_support,
                         min_share=opts.min_share, alpha=opts.alpha, bins=opts.bins)  # fmt: skip


def estimated(seed: int, rows: int, planted: bool, opts: Options) -> SegmentReport:
    rng = np.random.default_rng(seed)
    ref = scored(rows, rng, planted)
    cal = fit_calibration(ref.score.to_numpy(), ref.label.to_numpy(dtype=float))
    return find_estimated_segments(scored(rows, rng, planted), "score", cal, FEATURES, opts)


def drift(seed: int, rows: int, planted: bool, opts: Options) -> SegmentReport:
    rng = np.random.default_rng(seed)
    reference, _ = draw(rows, rng)
    current, inside = draw(rows, rng)
    if planted:
        extra = rng.choice(np.flatnonzero(inside.to_numpy()), int(1.5 * inside.sum()))
        current = pd.concat([current, current.iloc[extra]], ignore_index=True)
    return find_drift_segments(reference, current, FEATURES, opts)


def is_planted(report: SegmentReport) -> bool:
    if not report.segments:
        return False
    got = dict(report.segments[0].predicates)
    return got.keys() == {"a", "b", "x"} and got["a"] == "3" and got["b"] == "s0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--alpha", type=float, default=0.1)
    args = parser.parse_args()
    opts = Options(min_support=30, min_share=0.01, alpha=args.alpha, bins=4)
    print(f"seeds={args.seeds} rows={args.rows} alpha={args.alpha}")
    print("| mode | any discovery, nothing planted | planted found on top | s per search |")
    print("| --- | --- | --- | --- |")
    for name, search in (("labels", labels), ("estimated", estimated), ("drift", drift)):
        start = time.perf_counter()
        null = sum(bool(search(s, args.rows, False, opts).segments) for s in range(args.seeds))
        power = sum(is_planted(search(s, args.rows, True, opts)) for s in range(args.seeds))
        per = (time.perf_counter() - start) / (2 * args.seeds)
        sd = np.sqrt(args.alpha * (1 - args.alpha) / args.seeds)
        print(f"| {name} | {null / args.seeds:.3f} (nominal ≤ {args.alpha}, sd {sd:.3f}) | "
              f"{power / args.seeds:.2f} | {per:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
