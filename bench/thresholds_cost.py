"""What reference-derived thresholds add to baseline creation: chunk profiling + spreads.

`PYTHONPATH=. python bench/thresholds_cost.py [--rows 1000000] [--chunks 10] [--repeat 3]`.
The floor is profiling the reference once (what `baseline create` did before); the extra is
profiling K chunks on the same specs and scoring every applicable detector chunk vs whole.
Medians over repeats.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from monitor.detectors import chunk_profiles, reference_variability
from monitor.profiles import profile_frame, specs_for


def frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    cols = {f"x{i}": rng.normal(i, 1 + i / 10, rows) for i in range(8)}
    cols |= {f"c{i}": rng.choice([f"v{j}" for j in range(20)], rows) for i in range(2)}
    return pd.DataFrame(cols)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    df = frame(args.rows)
    specs = specs_for(list(df.columns), df)
    base, chunked, spread = [], [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        whole = profile_frame(df, specs)
        t1 = time.perf_counter()
        parts = chunk_profiles(df, specs, args.chunks)
        t2 = time.perf_counter()
        variability = reference_variability(whole, parts)
        t3 = time.perf_counter()
        base.append(t1 - t0)
        chunked.append(t2 - t1)
        spread.append(t3 - t2)
    b, c, s = (statistics.median(x) for x in (base, chunked, spread))
    print(
        f"rows={args.rows} columns={len(specs)} chunks={args.chunks} "
        f"spreads={len(variability.spreads)}\n"
        f"profile reference (floor): {b:.3f} s\nprofile chunks: {c:.3f} s\n"
        f"score spreads: {s:.3f} s\nextra: {(c + s) / b:.2f}x the floor"
    )


if __name__ == "__main__":
    main()
