"""Chosen outcome false-alarm cells of `bench/calibration_decisions.py`, on many more windows.

`PYTHONPATH=. python bench/calibration_outcome_cells.py [--cells slices10k,slices1k,whole1k]
[--reps 2000] [--chunks 8] [--jobs 2] [--label cells] [--power classification,regression]
[--power-reps 400]`

Each cell is `outcome_rows(size, reps, metrics, sliced, label)` (each result at 95%, nominal
0.025 per result), split into `--chunks` seeds (`label`-1, `label`-2, …; other windows than the
table's, which were chosen for looking high) run on `--jobs` processes and summed; `--power`
adds `outcome_power_rows(size, power_reps, metrics)` at 100 and 1,000 rows of those tasks (the
table's windows, first `--power-reps` of them); `--cells ""` runs none. Rates with their Wilson 95%
interval; `trials` counts results.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from bench.calibration_decisions import (
    CLASSIFICATION,
    POWER_SIZES,
    REGRESSION,
    Row,
    markdown,
    outcome_power_rows,
    outcome_rows,
)

# name: (window rows, sliced, metrics): the cells the 400-result table found high (issue 36)
CELLS = {
    "slices10k": (10_000, True, ("precision", "recall", "f1")),
    "slices1k": (1_000, True, ("f1", "log_loss")),
    "whole1k": (1_000, False, ("precision",)),
}


def chunk(cell: str, reps: int, label: str) -> list[Row]:
    size, sliced, metrics = CELLS[cell]
    return outcome_rows(size, reps, metrics, sliced, label)


def summed(parts: Sequence[list[Row]]) -> list[Row]:
    """The chunks' rows with their events and trials added (the same rows in each)."""
    return [
        Row(
            r.decision,
            r.case,
            sum(p[i].events for p in parts),
            sum(p[i].trials for p in parts),
            r.nominal,
            r.power,
        )
        for i, r in enumerate(parts[0])
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default=",".join(CELLS))
    parser.add_argument("--reps", type=int, default=2000, help="evaluations per cell")
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--label", default="cells")
    parser.add_argument("--power", default="", help="tasks: classification,regression")
    parser.add_argument("--power-reps", type=int, default=400)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cells = [c for c in args.cells.split(",") if c]
    tasks = {"classification": CLASSIFICATION, "regression": REGRESSION}
    powered = [tasks[t] for t in args.power.split(",") if t]
    per = -(-args.reps // args.chunks)
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = {c: [pool.submit(chunk, c, per, f"{args.label}-{k}")
                       for k in range(args.chunks)] for c in cells}  # fmt: skip
        power = [pool.submit(outcome_power_rows, size, args.power_reps, metrics)
                 for metrics in powered for size in POWER_SIZES]  # fmt: skip
        rows = [r for c in cells for r in summed([f.result() for f in futures[c]])]
        rows += [r for f in power for r in f.result()]
    print(markdown(rows))
    print(f"\n{len(rows)} rows; {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
